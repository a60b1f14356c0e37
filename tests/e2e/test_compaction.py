"""Log compaction with real clients against the real broker: many versions of keys and tombstones
over small segments, cleaned by the broker's background cleaner (a worker process), read back
across the offset gaps in every codec."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from broker.embedded import create_topic
from tests.broker_process import BrokerProcess
from tests.e2e.txn_clients import kafka_module

pytestmark = pytest.mark.e2e

CLEANER = {"log.cleaner.backoff.ms": "50", "transaction.state.log.num.partitions": "2",
           "offsets.topic.num.partitions": "2"}
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01",
                "delete.retention.ms": "0"}
KEYS = 20
ROUNDS = 15
Row = tuple[int, bytes, bytes | None]


def wait_for_log(broker: BrokerProcess, text: str, count: int = 1, timeout: float = 60.0) -> None:
    """Block until the broker has logged text count times (a condition on the log, not a delay)."""
    deadline = time.monotonic() + timeout
    while sum(text in line for line in broker.log_lines) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"broker never logged {text!r} {count} times")
        time.sleep(0.05)


def wait_cleaned_to(broker: BrokerProcess, partition: str, offset: int, timeout: float = 300.0) -> None:
    """Block until the cleaner's checkpoint of partition has passed offset (every closed segment up
    to it cleaned at least once): a condition on the broker's files, not a delay."""
    checkpoint = broker.data_dir / partition / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + timeout
    while not (checkpoint.exists() and int(checkpoint.read_text() or 0) > offset):
        if time.monotonic() > deadline:
            raise AssertionError(f"{partition} was not cleaned past offset {offset}")
        time.sleep(0.05)


def produce(bootstrap: str, topic: str, rows: Iterable[tuple[bytes, bytes | None]], codec: str) -> list[Row]:
    acked: list[Row] = []

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        acked.append((msg.offset(), msg.key(), msg.value()))

    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 0, "batch.num.messages": 4,
                  "enable.idempotence": True})
    for key, value in rows:
        p.produce(topic, key=key, value=value, on_delivery=delivered)
    assert p.flush(30) == 0
    return sorted(acked)


def consume_all(bootstrap: str, topic: str, end: int) -> list[Row]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([CTopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[Row] = []
    deadline = time.monotonic() + 120  # generous: the machine may be shared and loaded
    try:
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                if out and out[-1][0] == end - 1:
                    break
                continue
            out.append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() == end - 1:
                break
    finally:
        c.close()
    return out


def kafka_python_all(bootstrap: str, topic: str, end: int) -> list[Row]:
    """Every record from the start to end, read with kafka-python (across the offset gaps)."""
    kafka = kafka_module()
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    tp = kafka.TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out: list[Row] = []
    deadline = time.monotonic() + 120
    try:
        while c.position(tp) < end and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                out += [(r.offset, r.key, r.value) for r in records]
    finally:
        c.close()
    return out


def check_compacted(produced: list[Row], got: list[Row]) -> None:
    by_offset = {o: (k, v) for o, k, v in produced}
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(set(offsets)), "offsets go forward, gaps allowed"
    assert all(by_offset[o] == (k, v) for o, k, v in got), "every record is the one written at its offset"
    latest: dict[bytes, Row] = {}
    for row in produced:
        latest[row[1]] = row
    seen = {row[1]: row for row in got}
    for key, row in latest.items():  # the newest version of every key survives where it was written
        if row[2] is not None:
            assert seen.get(key) == row
    assert len(got) < len(produced), "something was compacted"


def compile_reader(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Compile tests/e2e/java/CompactedRead.java; returns the classpath to run it."""
    from tests.e2e.test_java_clients import classpath, compile_java

    return compile_java(tmp_path_factory.mktemp("java"), Path(__file__).parent / "java" / "CompactedRead.java",
                        classpath())


@pytest.fixture(scope="module")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_reader(tmp_path_factory)


def java_read(cp: str, bootstrap: str, topic: str, end: int, level: str) -> list[Row]:
    """Every record the stock Java consumer reads from the start to end (tests/e2e/java/CompactedRead.java)."""
    proc = subprocess.run(["java", "-cp", cp, "CompactedRead", bootstrap, topic, str(end), level],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows: list[Row] = []
    for line in proc.stdout.splitlines():
        if line.startswith("REC "):
            _, offset, key, value = line.split(" ", 3)
            rows.append((int(offset), key.encode(), None if value == "<null>" else value.encode()))
    assert f"CHECK position {end}" in proc.stdout
    return rows


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_versions_and_tombstones_compact_in_every_codec(broker_factory, java_classes: str,  # type: ignore[no-untyped-def]
                                                        codec: str) -> None:
    broker = broker_factory(CLEANER)
    topic = f"compacted-{codec}"
    create_topic(broker.bootstrap, topic, 1, TOPIC_CONFIG)
    rows = [(b"key-%d" % k, b"value-%d-%d-" % (k, r) + b"x" * 40) for r in range(ROUNDS) for k in range(KEYS)]
    rows += [(b"key-%d" % k, None) for k in range(0, KEYS, 4)]  # tombstones
    rows += [(b"filler-%d" % i, b"f" * 40) for i in range(200)]  # pushes them into closed segments
    produced = produce(broker.bootstrap, topic, rows, codec)
    last_tombstone = max(o for o, _, v in produced if v is None)
    wait_cleaned_to(broker, f"{topic}-0", last_tombstone)
    end = produced[-1][0] + 1
    got = consume_all(broker.bootstrap, topic, end)
    check_compacted(produced, got)
    deleted = {b"key-%d" % k for k in range(0, KEYS, 4)}
    assert not [row for row in got if row[1] in deleted and row[2] is not None], "no deleted key resurrected"
    # The other clients read the same records across the same gaps.
    assert kafka_python_all(broker.bootstrap, topic, end) == got
    java = [(o, k, v) for o, k, v in java_read(java_classes, broker.bootstrap, topic, end, "read_uncommitted")]
    assert java == got


def test_each_pass_is_measured_in_metrics_and_the_log(broker_factory) -> None:  # type: ignore[no-untyped-def]
    from tests.e2e.test_metrics import Scraper

    broker = broker_factory({**CLEANER, "metrics.port": "0"})
    topic = "compacted-metrics"
    create_topic(broker.bootstrap, topic, 1, TOPIC_CONFIG)
    produced = produce(broker.bootstrap, topic, [(b"k%d" % (i % 5), b"v" * 50) for i in range(300)], "none")
    wait_cleaned_to(broker, f"{topic}-0", produced[len(produced) // 2][0])
    samples = Scraper(broker).samples()
    assert samples[("eosbroker_log_cleaner_passes_total", frozenset())] >= 1
    read = samples[("eosbroker_log_cleaner_bytes_read_total", frozenset())]
    written = samples[("eosbroker_log_cleaner_bytes_written_total", frozenset())]
    assert 0 < written < read
    ratio = "eosbroker_log_cleaner_dirty_ratio"
    before = samples[(ratio, frozenset({("partition", f"{topic}-0"), ("when", "before")}))]
    after = samples[(ratio, frozenset({("partition", f"{topic}-0"), ("when", "after")}))]
    # produce has ended, but a pass may have seen segments roll meanwhile: no order between them
    assert 0 < before <= 1 and 0 <= after <= 1
    line = next(line for line in broker.log_lines if f"cleaned {topic}-0:" in line)
    assert re.search(r"\d+ bytes read, \d+ written .* dirty ratio [0-9.]+ before, [0-9.]+ after", line)
