"""Retention, DeleteRecords, log compaction and archiving over the object store, with real clients
(three brokers' worth of the cluster suite on PostgreSQL and SeaweedFS). Imported and run here over
objects: the cluster suite's compaction cases (versions, tombstones and transactions read exactly
after cleaning; a leader killed while cleaning; __consumer_offsets and __transaction_state
compacted and surviving the loss of their coordinator). Particular to objects: retention.ms and
DeleteRecords move the log start and the objects no run reads any more are deleted from the store,
while archiving keeps the rows of a partition bounded."""

from __future__ import annotations

import asyncio
import threading
import time

import asyncpg
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.embedded import create_topic
from coordinator.group.log import partition_for
from storage.object_store import open_object_store
from tests.e2e.cluster.conftest import WAIT_S, wait_until
from tests.e2e.cluster.test_cluster_compaction import (  # noqa: F401  (run here over objects)
    CLEANER,
    _commit,
    checkpoint,
    test_a_groups_offsets_after_many_commits_survive_failover_with_bounded_rows,
    test_a_leader_killed_while_cleaning_loses_and_resurrects_nothing,
    test_transaction_state_is_compacted_and_survives_the_loss_of_its_coordinator,
    test_versions_tombstones_and_transactions_read_exactly_after_cleaning,
)
from tests.e2e.objects.conftest import ObjectCluster
from tests.e2e.test_compaction import kafka_python_all

pytestmark = pytest.mark.e2e

MAINTENANCE = {"log.retention.check.interval.ms": "500", "cluster.object.orphan.grace.ms": "1000",
               "cluster.object.archive.min.runs": "4", "cluster.object.archive.interval.ms": "300"}
TOPIC = "retained"


async def _objects(cluster: ObjectCluster) -> tuple[set[str], set[str], int]:
    """The objects in the store, those a run reads, and the most runs one partition of TOPIC has."""
    settings = cluster.store_settings
    store = open_object_store(settings["cluster.object.store.url"], endpoint=settings["cluster.object.store.endpoint"],
                              region=settings["cluster.object.store.region"])
    stored = {i.key for prefix in ("flush/", "archive/") async for chunk in store.list(prefix) for i in chunk}
    conn = await asyncpg.connect(cluster.url)
    try:
        # Runs held inline in their rows (object_key '': markers, coordinator state) read no object.
        read = {r["object_key"] for r in await conn.fetch("SELECT DISTINCT object_key FROM batch_runs "
                                                            "WHERE object_key <> ''")}
        most = await conn.fetchval("SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM batch_runs r "
                                   "JOIN topics t USING (topic_id) WHERE t.name = $1 GROUP BY r.partition) c", TOPIC)
        return stored, read, most
    finally:
        await conn.close()


def _produce(bootstrap: str, first: int, count: int, timestamp_ms: int) -> None:
    """One flush per record (each delivered before the next is sent): many small runs."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for i in range(first, first + count):
        producer.produce(TOPIC, value=b"%d" % i, partition=0, timestamp=timestamp_ms)
        assert producer.flush(WAIT_S) == 0


def _low(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, _ = consumer.get_watermark_offsets(CTopicPartition(TOPIC, 0), WAIT_S)
        return int(low)
    finally:
        consumer.close()


def _read_from_start(bootstrap: str) -> list[tuple[int, bytes | None]]:
    """kafka-python from the log start to offset 24."""
    return [(o, v) for o, _, v in kafka_python_all(bootstrap, TOPIC, 24)]


def test_retention_and_delete_records_remove_runs_and_then_their_objects(cluster: ObjectCluster) -> None:
    cluster.start(1, 2, settings=MAINTENANCE)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    for future in admin.create_topics([NewTopic(TOPIC, 1, config={"retention.ms": "600000"})]).values():
        future.result(WAIT_S)
    cluster.settled(TOPIC)
    hour_ago = int(time.time() * 1000) - 3_600_000
    _produce(cluster.bootstrap(), 0, 12, hour_ago)  # past retention.ms
    wait_until(lambda: _low(cluster.bootstrap()) == 12, "retention moving the log start past the old records")
    _produce(cluster.bootstrap(), 12, 12, int(time.time() * 1000))
    [result] = admin.delete_records([CTopicPartition(TOPIC, 0, 18)]).values()
    assert result.result(WAIT_S).low_watermark == 18
    assert _read_from_start(cluster.bootstrap()) == [(o, b"%d" % o) for o in range(18, 24)]

    def settled() -> bool:  # every object left is read by a run, and archiving bounded the rows
        stored, read, most = asyncio.run(_objects(cluster))
        return stored == read and 0 < most < 4

    wait_until(settled, "the objects no run reads deleted and the partition's runs archived")
    assert any(cluster.brokers[n].logged("objects no run reads any more") for n in (1, 2))
    assert any(cluster.brokers[n].logged("archived") for n in (1, 2))
    assert _read_from_start(cluster.bootstrap(2)) == [(o, b"%d" % o) for o in range(18, 24)]


def test_a_groups_offsets_are_compacted_while_its_commits_go_on(cluster: ObjectCluster) -> None:
    """Cleaning makes progress under a steady write load, as Kafka's does, while archiving rewrites
    the partition's newest runs all along (every 100 ms here): a pass replaces the runs it read
    only if they are still as read, so each archiving round that rewrote some voided the pass in
    flight, and one slower than the round's interval seldom if ever committed while the commits went on."""
    cluster.start(1, settings={**CLEANER, "offsets.topic.segment.bytes": "4096",
                               "cluster.object.archive.interval.ms": "100", "cluster.object.archive.min.runs": "2"})
    create_topic(cluster.brokers[1].bootstrap, "committed", 1)
    cluster.settled("__consumer_offsets")
    group = "steady-commits"
    shard = partition_for(group, 4)
    stop, committed = threading.Event(), [0]

    def commit_on() -> None:
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group, "enable.auto.commit": False})
        try:
            while not stop.is_set():
                _commit(consumer, [CTopicPartition("committed", 0, committed[0])])
                committed[0] += 1
        finally:
            consumer.close()

    thread = threading.Thread(target=commit_on)
    thread.start()
    try:
        wait_until(lambda: checkpoint(cluster.url, "__consumer_offsets", shard) > 200 or not thread.is_alive(),
                   "__consumer_offsets cleaned past offset 200 while the commits go on")
        assert thread.is_alive(), "the commits stopped"
        at_the_pass = committed[0]
        wait_until(lambda: committed[0] > at_the_pass, "more commits after the pass")
    finally:
        stop.set()
        thread.join(WAIT_S)
    # Archiving goes on too: it waits a round while a pass is in flight (fc6f021), so on a fast machine
    # the cleaner can keep the partition busy until the commits stop; it archives the dirty tail then.
    wait_until(lambda: cluster.brokers[1].logged("archived"), "the archiver to archive runs", WAIT_S)
