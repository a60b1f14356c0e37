from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.pg_server import PostgresServer
from tests.s3_server import LoopbackS3Server, S3Server, s3_environment
from tests.time_report import register as register_time_report
from tests.tls_certs import TlsFiles, make_tls_files
from tests.versitygw_server import VersityServer

BrokerFactory = Callable[..., BrokerProcess]

# A success answer missing a field fails under the tests, in this process's handlers and in every
# broker the tests start (they inherit the environment); production logs it (broker/handler.py).
os.environ.setdefault("EOSBROKER_STRICT_RESPONSES", "1")
# The JVMs the tests start (the Java check programs, Kafka's tools and its broker, the SparkSession)
# do little work each, where C2's compiles cost more CPU than they save: ClientCheck's 3,000 records
# took 2.5 s of CPU instead of 3.8, and test_spark.py's session and three tests 243 s instead of 287 s
# (both under load).
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")


def pytest_configure(config: pytest.Config) -> None:
    register_time_report(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in the order make test hands them to its two workers (--dist loadfile
    --no-loadscope-reorder): the end-to-end files first, those with Spark tests ahead of the rest,
    then the unit-test files, each group by number of tests, most first. xdist's own order (number
    of tests alone) hands out the files of one or two end-to-end tests last, each up to minutes
    long, so one worker ran them while the other had nothing left; with the many short unit tests
    last, both finish within seconds. A Spark file is minutes long whatever its number of tests
    (test_oauthbearer_spark and test_compaction_spark have one each), so none is left for the end."""
    by_file: dict[Path, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)

    def weight(tests: list[pytest.Item]) -> tuple[bool, bool, int]:
        spark = any(t.get_closest_marker("spark") for t in tests)
        e2e = spark or any(t.get_closest_marker("e2e") for t in tests) or "e2e" in tests[0].path.parts
        return not e2e, not spark, -len(tests)

    items[:] = [item for tests in sorted(by_file.values(), key=weight) for item in tests]


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Start brokers with settings: broker_factory({"num.partitions": "3"}). At teardown each is
    stopped with SIGTERM and checked: the test errors if one exited non-zero or logged an ERROR
    line or a traceback it did not declare with broker.expect_log(regex)."""
    started: list[BrokerProcess] = []

    def start(settings: dict[str, str] | None = None, name: str = "data") -> BrokerProcess:
        proc = BrokerProcess(tmp_path / name, settings).start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()
    problems = [p for proc in started for p in proc.problems()]
    assert not problems, "a broker misbehaved; declare what the test provokes with broker.expect_log(regex):\n" \
        + "\n".join(problems)


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    """A fresh broker on an ephemeral loopback port with its data under tmp_path."""
    return broker_factory()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (tests/pg_server.py); tests take a fresh
    database each through pg_url. Its directory is a fresh one under the system temp dir, not
    pytest's: under root the server runs as `postgres`, which cannot enter pytest's 0700 dirs."""
    server = PostgresServer()
    server.init()
    try:
        server.start()
        yield server
    finally:
        server.discard()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server (cluster.url)."""
    return pg_server.create_database(f"eos_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A test CA, the broker's key store and client certificates (tests/tls_certs.py)."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@contextmanager
def _s3_credentials() -> Iterator[None]:
    """The test S3 servers' credentials in this process's environment, so every S3 client of the
    tests and every broker they start has them (and no cloud lookup); restored afterwards."""
    saved = {k: os.environ.get(k) for k in s3_environment()}
    os.environ.update(s3_environment())
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def seaweedfs_server() -> Iterator[S3Server]:
    """One SeaweedFS (tests/s3_server.py) for the session; tests take a fresh bucket each."""
    with _s3_credentials(), S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def versitygw_server() -> Iterator[VersityServer]:
    """One versitygw (tests/versitygw_server.py) for the session, with the same credentials."""
    with _s3_credentials(), VersityServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server(seaweedfs_server: S3Server) -> S3Server:
    """The real S3-compatible server of tests that need one: SeaweedFS (tests/storage/objects
    runs its tests over versitygw too)."""
    return seaweedfs_server


@pytest.fixture
def s3_bucket(s3_server: LoopbackS3Server) -> str:
    """A bucket of its own for one test."""
    return s3_server.new_bucket()
