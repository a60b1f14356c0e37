"""Fixtures for the Spark e2e tests: one local[2] SparkSession per test session with the connector
jars from `make spark-jars` (created only when a test asks for it), and a broker with small
internal topics; and a check that no test leaves a kafka-python client running."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.job import spark_session
from tests.broker_process import BrokerProcess
from tests.e2e.security_setup import add_scram_users, broker_settings
from tests.tls_certs import TlsFiles

# Small internal topics keep broker start-up quick.
BROKER_SETTINGS = {"transaction.state.log.num.partitions": "5", "offsets.topic.num.partitions": "5"}


def _kafka_python_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("kafka-io")}


@pytest.fixture(autouse=True)
def no_kafka_python_client_left() -> Iterator[None]:
    """A kafka-python 3 client left open keeps its IO thread reconnecting for the rest of the
    session, and a socket it drops fails whatever test is running when the garbage collector finds
    it (ResourceWarning): fail the test that left it instead."""
    before = _kafka_python_threads()
    yield
    deadline = time.monotonic() + 5
    while (left := _kafka_python_threads() - before) and time.monotonic() < deadline:
        time.sleep(0.05)  # close() stops the thread; give it a moment
    assert not left, f"a kafka-python client was left open (its IO threads: {sorted(t.name for t in left)})"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session(app_name="eosbroker-e2e")
    yield session
    session.stop()


@pytest.fixture
def spark_broker(broker_factory):  # type: ignore[no-untyped-def]
    return broker_factory(BROKER_SETTINGS)


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The `broker` fixture's broker, started once for a module whose tests neither restart it nor
    read state another test could add (each names its own topics, groups and ids): a start is
    seconds under load. Checked for logged errors and tracebacks when the module ends."""
    broker = BrokerProcess(tmp_path_factory.mktemp("module") / "data").start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory, tls_files: TlsFiles) -> Iterator[BrokerProcess]:
    """A broker with every kind of listener and SCRAM users (tests/e2e/security_setup.py)."""
    broker = BrokerProcess(tmp_path_factory.mktemp("secure") / "data", broker_settings(tls_files)).start()
    try:
        add_scram_users(broker.bootstrap)
        yield broker
    finally:
        broker.close()
