"""`make cluster`'s entry (tools/devcluster.py) run for real: PostgreSQL, SeaweedFS and three brokers
start, a transaction goes through the bootstrap servers it prints and is read at read_committed
by confluent-kafka, its records are in the object store, and SIGINT stops every process it started."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import obstore
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from obstore.store import S3Store

from broker.embedded import unexpected_problems
from tests.s3_server import ACCESS_KEY, REGION, SECRET_KEY

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 180.0
# Small internal topics keep the start quick on a loaded machine.
SETTINGS = ("transaction.state.log.num.partitions=4", "offsets.topic.num.partitions=4")


class Running:
    """The entry's process and the lines it prints, read by a thread."""

    def __init__(self, root: Path) -> None:
        cmd = [sys.executable, "-m", "tools.devcluster", "--dir", str(root), "--port", "0"]
        cmd += [arg for setting in SETTINGS for arg in ("--set", setting)]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.lines.append(line)
                self._new.put(line)
        self._new.put(None)

    def end(self) -> None:
        """SIGTERM if it still runs; then its last lines."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(WAIT_S)
        self._pump_thread.join(WAIT_S)

    def wait_for(self, pattern: str) -> re.Match[str]:
        regex = re.compile(pattern)
        while True:
            try:
                line = self._new.get(timeout=WAIT_S)
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r}:\n{''.join(self.lines)}") from None
            if line is None:
                raise AssertionError(f"exited before a line matching {pattern!r}:\n{''.join(self.lines)}")
            if found := regex.search(line):
                return found


@pytest.fixture
def cluster_dir() -> Iterator[Path]:
    """Under the system temp dir, not pytest's: under root PostgreSQL runs as `postgres`, which
    cannot enter pytest's 0700 directories."""
    root = Path(tempfile.mkdtemp(prefix="eos-devcluster-"))
    root.chmod(0o755)
    yield root / "cluster"
    shutil.rmtree(root, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def processes_naming(path: Path) -> list[str]:
    """Command lines of running processes that name `path` (brokers, weed, postgres all do)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and str(path) in cmdline and alive(int(proc.name)):
            found.append(cmdline)
    return found


def produce_transactions(bootstrap: str, topic: str) -> None:
    """A committed transaction of 10 records, then an aborted one of 5."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(60)
    for records, end in ((10, producer.commit_transaction), (5, producer.abort_transaction)):
        producer.begin_transaction()
        for i in range(records):
            producer.produce(topic, f"{records}-{i}".encode(), key=str(i).encode())
        end(60)


def read_committed(bootstrap: str, topic: str) -> list[bytes]:
    """Every partition read to its end (the LSO) by a new group at read_committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    consumer.subscribe([topic])
    values: list[bytes] = []
    ended: set[int] = set()
    try:
        while len(ended) < 3:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                ended.add(msg.partition() or 0)
            elif error is not None:
                raise KafkaException(error)
            else:
                values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def stored_objects(endpoint: str) -> list[str]:
    store = S3Store("eosbroker", endpoint=endpoint, region=REGION, access_key_id=ACCESS_KEY,
                    secret_access_key=SECRET_KEY, virtual_hosted_style_request=False,
                    client_options={"allow_http": True})
    return [meta["path"] for batch in obstore.list(store, prefix="cluster") for meta in batch]


COMMITTED = sorted(f"10-{i}".encode() for i in range(10))


def stop_and_check(run: Running, sig: signal.Signals, cluster_dir: Path) -> None:
    """`sig` ends the run with status 0, and every process it started with it."""
    started = [int(pid) for pid in re.findall(r"\(pid (\d+)", "".join(run.lines))]
    assert len(started) == 5  # PostgreSQL, SeaweedFS, three brokers
    run.proc.send_signal(sig)
    assert run.proc.wait(WAIT_S) == 0, "".join(run.lines)
    run.end()
    assert run.lines[-1] == "[cluster] stopped\n"
    assert [pid for pid in started if alive(pid)] == []
    assert processes_naming(cluster_dir) == []
    for node in (1, 2, 3):
        lines = (cluster_dir / f"broker-{node}.log").read_text().splitlines(keepends=True)
        assert unexpected_problems(lines, []) == [], node
        assert "stopped cleanly" in lines[-1], node


def test_make_cluster_serves_transactions_stops_and_restarts(cluster_dir: Path) -> None:
    """A transaction through the printed bootstrap servers; SIGINT stops everything; started again
    on the same directory it serves the same records; SIGTERM stops it too."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    run = Running(cluster_dir)
    try:
        endpoint = run.wait_for(r"SeaweedFS S3 (http://127\.0\.0\.1:\d+)").group(1)
        bootstrap = run.wait_for(r"bootstrap servers: (\S+)").group(1)
        assert len(bootstrap.split(",")) == 3
        produce_transactions(bootstrap, topic)
        assert sorted(read_committed(bootstrap, topic)) == COMMITTED
        assert any(key.startswith("cluster/flush/") for key in stored_objects(endpoint))
        stop_and_check(run, signal.SIGINT, cluster_dir)
        run = Running(cluster_dir)
        assert run.wait_for(r"SeaweedFS S3 (http://127\.0\.0\.1:\d+)").group(1) == endpoint
        bootstrap = run.wait_for(r"bootstrap servers: (\S+)").group(1)
        assert sorted(read_committed(bootstrap, topic)) == COMMITTED
        stop_and_check(run, signal.SIGTERM, cluster_dir)
    finally:
        run.end()
