"""Consumer groups end to end: real confluent-kafka and kafka-python consumers against a real
broker process: partitions shared out and rebalanced, committed offsets durable across kill -9,
silent members expired, and the errors Kafka gives for bad group requests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from tests.broker_process import REPO
from tests.e2e.txn_clients import create_topics, kafka_module, wait_until

pytestmark = pytest.mark.e2e

SETTINGS = {
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
}
TOPIC = "events"
ALL = {(TOPIC, p) for p in range(6)}


@pytest.fixture
def group_broker(broker_factory):  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, [TOPIC], 6)
    return broker


def produce(bootstrap: str, count: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + count):
        p.produce(TOPIC, value=f"m{i}".encode(), partition=i % 6)
    assert p.flush(30) == 0


def consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }
    conf.update(extra)
    c = Consumer(conf)
    c.subscribe([TOPIC])
    return c


def owned(c: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def poll_all(consumers: Iterable[Consumer], received: list[bytes]) -> None:
    for c in consumers:
        msg = c.poll(0.1)
        if msg is not None and msg.error() is None:
            received.append(msg.value())


def settle(consumers: list[Consumer], sizes: list[int], received: list[bytes]) -> None:
    """Poll every consumer until their assignments split the topic into the given sizes."""
    def split() -> bool:
        poll_all(consumers, received)
        parts = [owned(c) for c in consumers]
        return sorted(len(p) for p in parts) == sorted(sizes) and set().union(*parts) == ALL
    wait_until(split, f"assignments of sizes {sizes}", timeout=60)


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_consumers_split_and_rebalance_when_one_closes(group_broker, strategy: str) -> None:
    bs = group_broker.bootstrap
    produce(bs, 60)
    members = [consumer(bs, f"split-{strategy}", **{"partition.assignment.strategy": strategy})
               for _ in range(3)]
    received: list[bytes] = []
    settle(members, [2, 2, 2], received)
    first_owned = [owned(c) for c in members]
    assert all(len(o) == 2 for o in first_owned)
    members[0].close()  # LeaveGroup: the others take its partitions at once
    rest = members[1:]
    settle(rest, [3, 3], received)
    if strategy == "cooperative-sticky":
        # Incremental: nobody lost what it had; the departed member's two partitions moved.
        for c, before in zip(rest, first_owned[1:], strict=True):
            assert before <= owned(c)
    wait_until(lambda: (poll_all(rest, received), len(set(received)) >= 60)[1], "all 60 records")
    assert set(received) == {f"m{i}".encode() for i in range(60)}
    for c in rest:
        c.close()


def test_kafka_python_group_consumer(group_broker) -> None:
    kafka = kafka_module()
    bs = group_broker.bootstrap
    produce(bs, 30)
    c = kafka.KafkaConsumer(bootstrap_servers=bs, group_id="kp", auto_offset_reset="earliest",
                            enable_auto_commit=False)
    # Subscribe once the topic's metadata is known: kafka-python's leader assigns from its own
    # metadata cache and would hand out nothing if the join won the race with the first fetch.
    wait_until(lambda: c.partitions_for_topic(TOPIC) == set(range(6)), "metadata of events")
    c.subscribe([TOPIC])
    got: list[bytes] = []
    wait_until(lambda: (got.extend(r.value for recs in c.poll(200).values() for r in recs),
                        len(got) >= 30)[1], "30 records through kafka-python")
    assert {(tp.topic, tp.partition) for tp in c.assignment()} == ALL
    c.commit()
    committed = {p: c.committed(kafka.TopicPartition(TOPIC, p)) for p in range(6)}
    assert committed == dict.fromkeys(range(6), 5)
    c.close()


def test_committed_offsets_survive_kill_9(group_broker) -> None:
    bs = group_broker.bootstrap
    produce(bs, 60)
    c = consumer(bs, "durable")
    got: list[bytes] = []
    wait_until(lambda: (poll_all([c], got), len(got) >= 60)[1], "60 records")
    c.commit(asynchronous=False)
    c.close()
    group_broker.restart(kill=True)
    produce(bs, 12, start=60)
    c = consumer(bs, "durable")
    committed = c.committed([CTopicPartition(TOPIC, p) for p in range(6)], timeout=30)
    assert {tp.partition: tp.offset for tp in committed} == dict.fromkeys(range(6), 10)
    later: list[bytes] = []
    wait_until(lambda: (poll_all([c], later), len(later) >= 12)[1], "the 12 records after the restart")
    assert sorted(later) == sorted(f"m{i}".encode() for i in range(60, 72))
    c.close()


_SILENT_MEMBER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "expiry",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "auto.offset.reset": "earliest"})
    c.subscribe(["events"])
    while not c.assignment():
        c.poll(0.1)
    print("assigned", len(c.assignment()), flush=True)
    while True:
        c.poll(0.1)
""")


def test_member_that_stops_heartbeating_is_expired(group_broker) -> None:
    bs = group_broker.bootstrap
    survivor = consumer(bs, "expiry")
    received: list[bytes] = []
    wait_until(lambda: (poll_all([survivor], received), len(owned(survivor)) == 6)[1], "6 partitions")
    proc = subprocess.Popen([sys.executable, "-c", _SILENT_MEMBER, bs], cwd=REPO,
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        def shared() -> bool:
            poll_all([survivor], received)
            return len(owned(survivor)) == 3
        wait_until(shared, "the second member's join")
        assert proc.stdout is not None and proc.stdout.readline().startswith("assigned 3")
        proc.send_signal(signal.SIGKILL)  # no LeaveGroup: only the session timeout can tell
        proc.wait(10)
        wait_until(lambda: (poll_all([survivor], received), len(owned(survivor)) == 6)[1],
                   "the silent member's partitions back", timeout=60)
        # It was the session timeout that removed it (not a LeaveGroup, which a kill cannot send).
        wait_until(lambda: group_broker.logged("group expiry: removed"), "the expiry in the log")
    finally:
        proc.kill()
        proc.communicate()  # reap it and close its pipe
        survivor.close()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(group_broker) -> None:
    bs = group_broker.bootstrap
    conf = {"bootstrap.servers": bs, "group.id": "static", "session.timeout.ms": 30000,
            "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}
    revoked: list[object] = []
    a = Consumer(conf | {"group.instance.id": "a"})
    a.subscribe([TOPIC], on_revoke=lambda c, parts: revoked.append(parts))
    b = Consumer(conf | {"group.instance.id": "b"})
    b.subscribe([TOPIC])
    received: list[bytes] = []
    settle([a, b], [3, 3], received)
    a_owned, b_owned = owned(a), owned(b)
    revoked.clear()
    b.close()  # a static member sends no LeaveGroup: its place is kept for the session timeout
    b2 = Consumer(conf | {"group.instance.id": "b"})
    b2.subscribe([TOPIC])
    wait_until(lambda: (poll_all([a, b2], received), owned(b2) == b_owned)[1],
               "the restarted static member's old partitions")
    poll_all([a], received)
    assert owned(a) == a_owned and revoked == []  # the other member never rebalanced
    a.close()
    b2.close()


def test_initial_rebalance_delay_gathers_a_starting_group(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """With Kafka's default group.initial.rebalance.delay.ms (3 s) consumers that start together
    join one rebalance of the new group and split the topic."""
    broker = broker_factory({"offsets.topic.num.partitions": "5"})
    create_topics(broker.bootstrap, [TOPIC], 6)
    members = [consumer(broker.bootstrap, "delayed") for _ in range(2)]
    received: list[bytes] = []
    settle(members, [3, 3], received)
    wait_until(lambda: broker.logged("group delayed: Stable at generation 1 with 2 members"),
               "one first generation holding both members")
    for c in members:
        c.close()


def test_deleting_a_topic_drops_its_committed_offsets(group_broker) -> None:
    from confluent_kafka.admin import AdminClient

    bs = group_broker.bootstrap
    c = Consumer({"bootstrap.servers": bs, "group.id": "gone", "enable.auto.commit": False})
    tps = [CTopicPartition(TOPIC, p, 5) for p in range(6)]
    c.commit(offsets=tps, asynchronous=False)
    assert {tp.offset for tp in c.committed(tps, timeout=30)} == {5}
    admin = AdminClient({"bootstrap.servers": bs})
    admin.delete_topics([TOPIC])[TOPIC].result(30)
    create_topics(bs, [TOPIC], 6)
    # OFFSET_INVALID (-1001): the recreated topic starts without the old positions.
    assert {tp.offset for tp in c.committed(tps, timeout=30)} == {-1001}
    c.close()
