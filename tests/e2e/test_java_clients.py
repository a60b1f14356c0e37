"""The stock Java kafka-clients (the version Spark's connector brings, from `make spark-jars`)
against the broker: admin, idempotent and transactional producers, both isolation levels."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.broker_process import REPO, BrokerProcess

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "ClientCheck.java"
# The check programs compiled, one directory per sources, jars, javac flags and javac: a program
# several files run (ClientCheck) is compiled once a run, and not again while nothing changes
# (each javac is a JVM start and seconds of CPU under load).
JAVA_CLASSES = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eosbroker" / "java-checks"
# Logging and compression codecs the clients load at run time come with PySpark's jars.
RUNTIME_JARS = ("slf4j-api", "zstd-jni", "lz4-java", "snappy-java")


def classpath() -> list[Path]:
    jars = sorted((REPO / "spark-jars").glob("kafka-clients-*.jar"))
    if not jars:
        pytest.fail("spark-jars/kafka-clients-*.jar is missing: run `make spark-jars`")
    import pyspark

    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    jars += [j for j in pyspark_jars.glob("*.jar") if j.name.startswith(RUNTIME_JARS)]
    return jars


def java4_jars() -> list[Path]:
    """kafka-clients 4.x (from Kafka's tools, `make kafka-tools`) and what it loads at run time."""
    tools = REPO / "tools" / "kafka-tools"
    jars = sorted(tools.glob("kafka-clients-4.*.jar"))
    if not jars:
        pytest.fail("tools/kafka-tools/kafka-clients-4.*.jar is missing: run `make kafka-tools`")
    return jars + [j for j in tools.glob("*.jar") if j.name.startswith(("slf4j-api", "zstd-jni", "lz4-java", "snappy"))]


def compile_java(out: Path, source: Path, jars: list[Path], *javac_flags: str) -> str:
    """Compile one check program (with Checks.java, what they share) against `jars` into `out`,
    unless JAVA_CLASSES has it from the same sources, jars, flags and javac; returns the classpath
    to run it."""
    javac = shutil.which("javac")
    if javac is None:
        pytest.fail("javac is required (Java 17)")
    cp = ":".join(str(j) for j in jars)
    sources = [source, source.with_name("Checks.java")]
    cached = JAVA_CLASSES / f"{source.stem}-{_javac_key(sources, jars, javac_flags, javac)}"
    if not cached.is_dir():
        subprocess.run([javac, *javac_flags, "-cp", cp, "-d", str(out), *map(str, sources)], check=True)
        _keep(out, cached)
    return f"{cached}:{cp}"


def _javac_key(sources: list[Path], jars: list[Path], flags: tuple[str, ...], javac: str) -> str:
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    for jar in jars:
        stat = jar.stat()
        digest.update(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(" ".join([*flags, os.path.realpath(javac)]).encode())
    return digest.hexdigest()[:20]


def _keep(out: Path, cached: Path) -> None:
    """Copy javac's classes from `out` (the caller's directory may hold other files) to `cached`,
    whole: a worker that compiled the same program at the same time leaves the first copy there."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cached.parent) as scratch:
        for cls in out.rglob("*.class"):
            target = Path(scratch) / "classes" / cls.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(cls, target)
        with contextlib.suppress(OSError):
            os.rename(Path(scratch) / "classes", cached)


@pytest.fixture
def broker(module_broker: BrokerProcess) -> BrokerProcess:
    """Both tests here share one broker (tests/e2e/conftest.py's module_broker): neither restarts
    it, and each writes a topic and transactional id of its own."""
    return module_broker


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java"), SOURCE, classpath())


def run_check(cp: str, broker: BrokerProcess, topic: str, n: int, *mode: str, bootstrap: str | None = None,
              client_config: Path | None = None) -> dict[str, str]:
    """ClientCheck's CHECK lines; `client_config`: a .properties file of security settings."""
    env = dict(os.environ, CHECK_CLIENT_CONFIG=str(client_config)) if client_config is not None else None
    proc = subprocess.run(
        ["java", "-cp", cp, "ClientCheck", bootstrap or broker.bootstrap, topic, str(n), *mode],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))


def test_java_admin_idempotent_producer_and_consumers(compiled: str, broker: BrokerProcess) -> None:
    checks = run_check(compiled, broker, "java-plain", 3000)
    assert checks == {
        "topic_listed": "true", "partitions": "2",
        "read_committed_aborted_seen": "0", "read_committed": "3000",
        "read_uncommitted_aborted_seen": "0", "read_uncommitted": "3000",
    }


def test_java_transactions_commit_and_abort(compiled: str, broker: BrokerProcess) -> None:
    checks = run_check(compiled, broker, "java-txn", 500, "txn")
    assert checks["read_committed"] == "1000"  # plain + committed
    assert checks["read_committed_aborted_seen"] == "0"
    assert checks["read_uncommitted"] == "1500"  # read_uncommitted sees the aborted records too
    assert checks["read_uncommitted_aborted_seen"] == "500"
