"""Transactions and consumer groups on three brokers over one PostgreSQL (docs/cluster.md): a
transaction spans partitions led by different brokers (its markers travel as WriteTxnMarkers
between brokers), read exactly by read_committed confluent-kafka, kafka-python and Java consumers;
the transaction coordinator killed (-9) between PrepareCommit and its markers leaves nothing torn
(the next coordinator of the shard completes the commit); a consumer group's committed offsets
survive the loss of its coordinator's broker."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from tests.e2e.cluster.conftest import WAIT_S, Cluster, wait_until
from tests.e2e.test_java_clients import SOURCE, classpath, compile_java
from tests.e2e.txn_clients import confluent_read, kafka_python_read, txn_producer
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
# Markers to a paused broker are given up on (and sent again, to whoever leads then) quickly.
SETTINGS = {"request.timeout.ms": "2000"}
GROUP, TRANSACTION = 0, 1


def create_topic(cluster: Cluster, name: str, partitions: int) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(WAIT_S)
    return {p: leader for p, (leader, _) in cluster.settled(name).items()}


def coordinator_of(cluster: Cluster, key_type: int, key: str) -> int:
    """The live broker every live broker names as the key's coordinator (once they agree: a dead
    one is named until its lease lapses)."""
    found: set[int] = set()

    def agreed() -> bool:
        nonlocal found
        found = set()
        for node_id in cluster.live():
            with RawClient(cluster.brokers[node_id].bootstrap) as client:
                request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,))
                [entry] = client.request(request).coordinators
            found.add(entry.node_id if entry.error_code == 0 else -1)
        return len(found) == 1 and found <= set(cluster.live())

    wait_until(agreed, f"the brokers agreeing on the coordinator of {key!r}")
    return found.pop()


def committed_rows(rows: list[tuple[str, int, int, bytes]]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for _, partition, _, value in rows:
        out.setdefault(partition, []).append(value)
    return out


def test_transactions_across_brokers_are_read_exactly(cluster: Cluster, tmp_path: Any) -> None:
    cluster.start(1, 2, 3, settings=SETTINGS)
    leaders = create_topic(cluster, "orders", 6)
    assert len(set(leaders.values())) == 3, leaders  # every broker leads some partition
    transactions_read_exactly(cluster.bootstrap(), "orders", 6, tmp_path)


def transactions_read_exactly(bootstrap: str, topic: str, partitions: int, tmp_path: Any) -> None:
    """Three transactions over every partition of topic (committed, aborted, committed) read
    exactly at read_committed by confluent-kafka and kafka-python; then Java's ClientCheck."""
    producer = txn_producer(bootstrap, f"{topic}-tx")
    expected: dict[int, list[bytes]] = {}
    for round_, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for p in range(partitions):
            for i in range(3):
                value = b"r%d-p%d-%d" % (round_, p, i)
                producer.produce(topic, value=value, partition=p)
                if commit:
                    expected.setdefault(p, []).append(value)
        if commit:
            producer.commit_transaction(WAIT_S)
        else:
            producer.flush(WAIT_S)
            producer.abort_transaction(WAIT_S)
    total = sum(len(v) for v in expected.values())
    assert committed_rows(confluent_read(bootstrap, {topic: partitions}, "read_committed", total)) == expected
    assert committed_rows(kafka_python_read(bootstrap, {topic: partitions}, total)) == expected
    java = compile_java(tmp_path / "java", SOURCE, classpath())
    proc = subprocess.run(["java", "-cp", java, "ClientCheck", bootstrap, f"java-{topic}", "300", "txn"],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    assert (checks["read_committed"], checks["read_committed_aborted_seen"]) == ("600", "0")
    assert checks["read_uncommitted"] == "900"


def open_remote_transaction(cluster: Cluster, topic: str, txn_id: str,
                            values: list[bytes]) -> tuple[Any, int, int, int]:
    """Three brokers, topic over 6 partitions, and an open transaction of txn_id holding values in
    a partition led by another broker than the id's coordinator, acknowledged (so stored in the
    database): (producer, that partition, its leader, the coordinator)."""
    cluster.start(1, 2, 3, settings=SETTINGS)
    leaders = create_topic(cluster, topic, 6)
    coordinator = coordinator_of(cluster, TRANSACTION, txn_id)
    remote = next(p for p, leader in leaders.items() if leader != coordinator)
    producer = txn_producer(cluster.bootstrap(), txn_id)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value, partition=remote)
    producer.flush(WAIT_S)
    return producer, remote, leaders[remote], coordinator


def test_the_next_coordinator_completes_a_commit_whose_coordinator_died(cluster: Cluster) -> None:
    txn_id, values = "ledger-tx", [b"v%d" % i for i in range(5)]
    producer, remote, paused, coordinator = open_remote_transaction(cluster, "ledger", txn_id, values)
    # The partition's leader stops answering: the coordinator persists PrepareCommit and answers
    # EndTxn, but cannot write the marker there; then it dies.
    cluster.brokers[paused].pause()
    try:
        producer.commit_transaction(WAIT_S)
    finally:
        cluster.kill(coordinator)
        cluster.brokers[paused].resume()
    rows = confluent_read(cluster.bootstrap(), {"ledger": 6}, "read_committed", len(values))
    assert committed_rows(rows) == {remote: values}
    assert any(cluster.brokers[n].logged(f"resuming PrepareCommit of '{txn_id}'") for n in cluster.live())
    fresh = txn_producer(cluster.bootstrap(), txn_id)  # the id is usable again: nothing left pending
    fresh.begin_transaction()
    fresh.produce("ledger", value=b"after", partition=remote)
    fresh.commit_transaction(WAIT_S)
    rows = confluent_read(cluster.bootstrap(), {"ledger": 6}, "read_committed", len(values) + 1)
    assert committed_rows(rows) == {remote: [*values, b"after"]}


def consume_and_commit(cluster: Cluster, group: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait_until(lambda: _poll_into(consumer, got, count), f"{count} records of {topic}")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def _poll_into(consumer: Consumer, got: list[bytes], count: int) -> bool:
    msg = consumer.poll(0.5)
    if msg is not None and msg.error() is None:
        got.append(msg.value())
    return len(got) >= count


def test_committed_offsets_survive_the_loss_of_the_group_coordinator(cluster: Cluster) -> None:
    cluster.start(1, 2, 3, settings=SETTINGS)
    create_topic(cluster, "events", 1)
    producer = txn_producer(cluster.bootstrap(), "events-tx")
    producer.begin_transaction()
    for i in range(10):
        producer.produce("events", value=b"e%d" % i, partition=0)
    producer.commit_transaction(WAIT_S)
    assert consume_and_commit(cluster, "readers", "events", 6)[:6] == [b"e%d" % i for i in range(6)]
    coordinator = coordinator_of(cluster, GROUP, "readers")
    cluster.kill(coordinator)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "readers",
                         "auto.offset.reset": "earliest"})
    try:
        [committed] = consumer.committed([CTopicPartition("events", 0)], timeout=WAIT_S)
        assert committed.offset >= 6
    finally:
        consumer.close()
    rest = consume_and_commit(cluster, "readers", "events", 10 - committed.offset)
    assert rest == [b"e%d" % i for i in range(committed.offset, 10)]


def test_markers_follow_a_partition_whose_leader_was_killed_mid_transaction(cluster: Cluster) -> None:
    txn_id, values = "stock-tx", [b"s%d" % i for i in range(5)]
    producer, remote, leader, _ = open_remote_transaction(cluster, "stock", txn_id, values)
    cluster.kill(leader)
    # The coordinator retries the marker until a live broker leads the partition, then writes it there.
    producer.commit_transaction(WAIT_S)
    rows = confluent_read(cluster.bootstrap(), {"stock": 6}, "read_committed", len(values))
    assert committed_rows(rows) == {remote: values}
    producer.begin_transaction()
    producer.produce("stock", value=b"next", partition=remote)
    producer.commit_transaction(WAIT_S)
    rows = confluent_read(cluster.bootstrap(), {"stock": 6}, "read_committed", len(values) + 1)
    assert committed_rows(rows) == {remote: [*values, b"next"]}
