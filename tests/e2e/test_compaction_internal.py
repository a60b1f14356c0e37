"""__consumer_offsets stays bounded: 100,000 offset commits of one group (300,000 records, ~25 MB
uncompacted over ~25 segments), compacted by the broker's cleaner over segments of
offsets.topic.segment.bytes; a restart replays the compacted partition only, and every group's
latest offsets survive it (a clean stop and a kill -9)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from broker.embedded import create_topic
from tests.broker_process import BrokerProcess
from tests.e2e.offset_commits import commit_many

pytestmark = pytest.mark.e2e

COMMITS = 100_000
CONNECTIONS = 4  # in parallel: the group coordinator then appends several commits at once
PARTITIONS = 3
SEGMENT_BYTES = 1 << 20
SETTINGS = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "2",
            "offsets.topic.segment.bytes": str(SEGMENT_BYTES), "log.cleaner.backoff.ms": "100"}


def offsets_bytes(data_dir: Path) -> int:
    return sum(f.stat().st_size for d in data_dir.glob("__consumer_offsets-*") for f in d.glob("*.log"))


def wait_until_below(data_dir: Path, bound: int, timeout: float = 180.0) -> int:
    """Block until the cleaner has brought __consumer_offsets under bound bytes (a condition)."""
    deadline = time.monotonic() + timeout
    while (size := offsets_bytes(data_dir)) > bound:
        if time.monotonic() > deadline:
            raise AssertionError(f"__consumer_offsets still holds {size} bytes, more than {bound}")
        time.sleep(0.2)
    return size


def committed(bootstrap: str, group: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = c.committed([CTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        return [tp.offset for tp in found]
    finally:
        c.close()


def replayed_records(broker: BrokerProcess) -> int:
    lines = [line for line in broker.log_lines if "groups from" in line and "__consumer_offsets" in line]
    match = re.search(r"loaded \d+ groups from (\d+) records", lines[-1])
    assert match is not None
    return int(match.group(1))


@pytest.mark.timeout(900)
def test_100k_offset_commits_stay_bounded_across_restarts(broker_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    data_dir = tmp_path / "data"
    create_topic(broker.bootstrap, "orders", PARTITIONS)
    started = time.monotonic()
    senders = [threading.Thread(target=commit_many, args=(broker.bootstrap, "busy-group", "orders", PARTITIONS,
                                                          COMMITS // CONNECTIONS)) for _ in range(CONNECTIONS)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    commit_many(broker.bootstrap, "busy-group", "orders", PARTITIONS, 1, first_offset=COMMITS - 1)
    commit_seconds = time.monotonic() - started
    written = COMMITS * PARTITIONS
    # Without compaction the records of 300,000 offset commits take ~25 MB; the cleaner keeps one
    # per partition in closed segments, leaving at most the active segment and a little more.
    size = wait_until_below(data_dir, 3 * SEGMENT_BYTES)
    latest = [COMMITS - 1] * PARTITIONS
    assert committed(broker.bootstrap, "busy-group", "orders") == latest

    for kill in (False, True):
        started = time.monotonic()
        broker.restart(kill=kill)
        restart_seconds = time.monotonic() - started
        replayed = replayed_records(broker)
        print(f"\n{COMMITS} commits in {commit_seconds:.1f} s; __consumer_offsets {size} bytes on disk; "
              f"restart ({'kill -9' if kill else 'clean stop'}) {restart_seconds:.2f} s replaying {replayed} "
              f"of {written} records")
        assert replayed < written // 10
        assert committed(broker.bootstrap, "busy-group", "orders") == latest
