"""A stock MirrorMaker 2 in dedicated mode (org.apache.kafka.connect.mirror.MirrorMaker, from
`make kafka-connect`, 4.3.1) mirroring one broker (cluster a) to another (cluster b), with
exactly.once.source.support=enabled and a read_committed source consumer.

a's topic holds plain records, committed transactions and an aborted one; b's `a.orders` must get
the committed records once, in order, and no aborted one. MirrorMaker's other flows must work too:
heartbeats, checkpoints, the offset syncs on a, and the consumer group's offsets on a translated
to b's topic (sync.group.offsets.enabled)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory
from tests.e2e.connect_process import ConnectProcess, free_port, write_properties
from tests.e2e.txn_clients import wait_until
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e

WAIT_S = 180.0
TOPIC = "orders"
GROUP = "order-readers"


def mm2_properties(a: str, b: str) -> dict[str, str]:
    every_second = {name: "1" for name in (
        "sync.group.offsets.interval.seconds", "emit.checkpoints.interval.seconds",
        "emit.heartbeats.interval.seconds", "refresh.topics.interval.seconds", "refresh.groups.interval.seconds")}
    one_replica = {f"{name}.replication.factor": "1" for name in (
        "checkpoints.topic", "heartbeats.topic", "offset-syncs.topic", "offset.storage", "status.storage",
        "config.storage")}
    return {
        "clusters": "a, b", "a.bootstrap.servers": a, "b.bootstrap.servers": b,
        "a->b.enabled": "true", "a->b.topics": TOPIC, "b->a.enabled": "false",
        "replication.factor": "1", **one_replica, **every_second,
        "sync.group.offsets.enabled": "true", "offset.lag.max": "0",
        # worker settings are the target cluster's (MirrorMakerConfig.workerConfig): b's herder runs a->b
        "b.exactly.once.source.support": "enabled", "a.consumer.isolation.level": "read_committed",
        "dedicated.mode.enable.internal.rest": "true", "listeners": f"http://127.0.0.1:{free_port()}",
    }


@pytest.fixture
def clusters(broker_factory: BrokerFactory) -> tuple[BrokerProcess, BrokerProcess]:
    return broker_factory(name="a"), broker_factory(name="b")


@pytest.fixture
def mirror_maker(clusters: tuple[BrokerProcess, BrokerProcess], tmp_path: Path) -> Iterator[ConnectProcess]:
    a, b = clusters
    properties = write_properties(tmp_path / "mm2.properties", mm2_properties(a.bootstrap, b.bootstrap))
    proc = ConnectProcess("org.apache.kafka.connect.mirror.MirrorMaker", properties, tmp_path / "mm2.log")
    try:
        yield proc
    finally:
        proc.stop()
        assert not proc.errors(), "MirrorMaker logged errors:\n" + "\n".join(proc.errors())


def produce_to_a(bootstrap: str) -> list[str]:
    """Plain records, two committed transactions around an aborted one; returns the committed values."""
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(40):
        plain.produce(TOPIC, f"plain-{i}".encode())
    assert plain.flush(30) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "orders-writer"})
    txn.init_transactions(30)
    committed = [f"plain-{i}" for i in range(40)]
    for name, commit in (("first", True), ("aborted", False), ("second", True)):
        txn.begin_transaction()
        values = [f"{name}-{i}" for i in range(20)]
        for value in values:
            txn.produce(TOPIC, value.encode())
        if commit:
            txn.commit_transaction(30)
            committed += values
        else:
            txn.flush(30)
            txn.abort_transaction(30)
    return committed


def read_committed(bootstrap: str, topic: str, start: int = 0) -> list[tuple[int, str]]:
    """(offset, value) of partition 0's records from `start` to its end, at read_committed; [] if
    the topic is not there yet."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    records: list[tuple[int, str]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        while (msg := consumer.poll(10)) is not None:
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return records
                if msg.error().code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    return []
                raise KafkaException(msg.error())
            records.append((msg.offset(), msg.value().decode()))
        return records
    finally:
        consumer.close()


def consume_as_group(bootstrap: str, count: int) -> None:
    """GROUP reads `count` records of a's topic and commits its position."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([TOPIC])
        seen = 0
        while seen < count:
            msg = consumer.poll(30)
            assert msg is not None, f"{GROUP} got {seen} of {count} records"
            if msg.error():
                raise KafkaException(msg.error())
            seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def group_offset_on_b(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        return int(consumer.committed([TopicPartition(f"a.{TOPIC}", 0)], timeout=10)[0].offset)
    except KafkaException:
        return -1
    finally:
        consumer.close()


def test_mirror_maker_mirrors_committed_records(
        clusters: tuple[BrokerProcess, BrokerProcess], mirror_maker: ConnectProcess) -> None:
    a, b = clusters
    admin_a, admin_b = AdminClient({"bootstrap.servers": a.bootstrap}), AdminClient({"bootstrap.servers": b.bootstrap})
    admin_a.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    expected = produce_to_a(a.bootstrap)
    consume_as_group(a.bootstrap, len(expected))

    mirrored = f"a.{TOPIC}"
    wait_until(lambda: mirror_maker.alive() and len(read_committed(b.bootstrap, mirrored)) >= len(expected),
               f"{mirrored} on b", WAIT_S)
    records = read_committed(b.bootstrap, mirrored)
    assert [value for _, value in records] == expected
    # written by the source task's transactional producer (exactly-once source), not a plain one
    listed = run_tool("kafka-transactions", "--bootstrap-server", b.bootstrap, "list", check=True).stdout
    assert "a-mm2-MirrorSourceConnector-0" in listed, listed

    wait_until(lambda: {"heartbeats", "a.checkpoints.internal"} <= set(admin_b.list_topics(timeout=10).topics),
               "heartbeats and checkpoints on b", WAIT_S)
    assert "mm2-offset-syncs.b.internal" in admin_a.list_topics(timeout=10).topics
    # The group read everything on a, so its translated offset on b is past b's last record: a
    # consumer of the group on b has nothing left to read.
    wait_until(lambda: group_offset_on_b(b.bootstrap) > records[-1][0], f"{GROUP}'s offset translated to b", WAIT_S)
    assert read_committed(b.bootstrap, mirrored, group_offset_on_b(b.bootstrap)) == []
