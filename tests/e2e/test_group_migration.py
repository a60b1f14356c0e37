"""Online migration of a live group between the classic and the consumer protocol (KIP-848,
group.consumer.migration.policy=bidirectional, Kafka's default), end to end: Java kafka-clients
4.x consumers roll one by one from group.protocol=classic to consumer and back while a
librdkafka classic member stays in the group; the broker is killed (-9) while the group is
converted; every record is read exactly once across the roll (each member commits after each
poll), and Kafka's kafka-consumer-groups describes the converted group."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from tests.e2e.test_consumer_groups import TOPIC, group_broker, owned, produce
from tests.e2e.test_consumer_protocol import JavaMember, committed_offsets, java_member, poll_and_commit
from tests.e2e.test_kafka_tools import tool
from tests.e2e.txn_clients import wait_until

pytestmark = pytest.mark.e2e
__all__ = ("group_broker", "java_member")
GROUP = "roll"


def group_type(bootstrap: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [listed] = [g for g in admin.list_consumer_groups().result().valid if g.group_id == GROUP]
    return str(listed.type).rsplit(".", 1)[-1]


class Roll:
    """The group under test: a librdkafka classic member and two Java members."""

    def __init__(self, bootstrap: str, classpath: str) -> None:
        self.bootstrap, self.classpath = bootstrap, classpath
        self.rdkafka = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "classic",
                                 "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.rdkafka.subscribe([TOPIC])
        self.got: list[bytes] = []
        self.java = [JavaMember(classpath, bootstrap, GROUP, "classic") for _ in range(2)]
        self.started = list(self.java)

    def replace(self, i: int, protocol: str) -> None:
        """Member i leaves (close) and comes back speaking `protocol`."""
        self.java[i].stop()
        self.java[i] = JavaMember(self.classpath, self.bootstrap, GROUP, protocol)
        self.started.append(self.java[i])

    def shared(self) -> bool:
        """Every member holds some partitions, and together all six, each once."""
        poll_and_commit(self.rdkafka, self.got)
        parts = [{p for _, p in owned(self.rdkafka)}] + [set(j.assigned) for j in self.java]
        return all(parts) and sum(len(p) for p in parts) == 6 and set().union(*parts) == set(range(6))

    def settle(self, what: str) -> None:
        wait_until(self.shared, what, timeout=180)

    def values(self) -> list[bytes]:
        return self.got + [v for j in self.started for v in j.values]

    def read_all(self, count: int) -> None:
        every = {f"m{i}".encode() for i in range(count)}
        wait_until(lambda: (self.shared(), every <= set(self.values()))[1], f"all {count} records", timeout=120)

    def close(self) -> None:
        for j in self.started:
            j.close()
        self.rdkafka.close()


def test_java_members_roll_classic_to_consumer_and_back_reading_each_record_once(  # type: ignore[no-untyped-def]
        group_broker, java_member: str) -> None:
    bs = group_broker.bootstrap
    produce(bs, 60)
    roll = Roll(bs, java_member)
    try:
        roll.settle("a classic group of three")
        roll.read_all(60)
        assert group_type(bs) == "CLASSIC"
        roll.replace(0, "consumer")  # the upgrade: the librdkafka and a Java member stay classic
        roll.settle("the converted group shared out")
        assert group_type(bs) == "CONSUMER"
        assert any("converted the classic group" in line for line in group_broker.log_lines)
        produce(bs, 12, start=60)
        roll.read_all(72)
        wait_until(lambda: (roll.shared(), committed_offsets(bs, GROUP) == dict.fromkeys(range(6), 12))[1],
                   "every offset committed")
        rows = [line.split() for line in tool(group_broker, "kafka-consumer-groups", "--describe", "--group",
                                              GROUP).splitlines() if line.startswith(GROUP)]
        assert sorted(int(r[2]) for r in rows) == list(range(6)) and {r[3] for r in rows} == {"12"}
        members = tool(group_broker, "kafka-consumer-groups", "--describe", "--group", GROUP, "--members")
        assert len([line for line in members.splitlines() if line.startswith(GROUP)]) == 3
        # A crash while the group is converted: the restarted broker replays it, classic members
        # and all, and everyone carries on from the committed offsets.
        group_broker.restart(kill=True)
        produce(bs, 12, start=72)
        roll.read_all(84)
        assert group_type(bs) == "CONSUMER"
        roll.replace(1, "consumer")
        roll.settle("two consumer-protocol Java members and a classic librdkafka one")
        roll.replace(0, "classic")
        roll.replace(1, "classic")  # the last consumer-protocol member leaves: the downgrade
        roll.settle("a classic group again")
        assert group_type(bs) == "CLASSIC"
        assert any("converted the consumer group" in line for line in group_broker.log_lines)
        produce(bs, 12, start=84)
        roll.read_all(96)
        values = roll.values()
        assert len(values) == len(set(values)) == 96, "a record was read twice"
        assert not [f for j in roll.started for f in j.failed_commits]
    finally:
        roll.close()


def test_librdkafka_classic_and_consumer_members_upgrade_and_downgrade_a_group(group_broker) -> None:  # type: ignore[no-untyped-def]
    bs = group_broker.bootstrap
    produce(bs, 30)
    conf = {"bootstrap.servers": bs, "group.id": "mixed-rd", "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    classic = Consumer(conf | {"group.protocol": "classic"})
    classic.subscribe([TOPIC])
    got: list[bytes] = []
    modern: Consumer | None = None
    try:
        wait_until(lambda: (poll_and_commit(classic, got), len(owned(classic)) == 6)[1], "the classic member's six")
        modern = Consumer(conf | {"group.protocol": "consumer"})
        modern.subscribe([TOPIC])
        members = [classic, modern]

        def shared() -> bool:
            for c in members:
                poll_and_commit(c, got)
            parts = [owned(c) for c in members]
            return all(parts) and sum(len(p) for p in parts) == 6 and len(set().union(*parts)) == 6
        wait_until(shared, "both members sharing the six partitions", timeout=120)
        admin = AdminClient({"bootstrap.servers": bs})
        [listed] = [g for g in admin.list_consumer_groups().result().valid if g.group_id == "mixed-rd"]
        assert str(listed.type).endswith("CONSUMER")
        modern.close()  # the last consumer-protocol member leaves: back to a classic group
        modern, members = None, [classic]
        wait_until(lambda: (poll_and_commit(classic, got), len(owned(classic)) == 6)[1], "all six back", 120)
        [listed] = [g for g in admin.list_consumer_groups().result().valid if g.group_id == "mixed-rd"]
        assert str(listed.type).endswith("CLASSIC")
        produce(bs, 6, start=30)
        every = {f"m{i}".encode() for i in range(36)}
        wait_until(lambda: (poll_and_commit(classic, got), every <= set(got))[1], "every record")
        assert len(got) == len(set(got)), "a record was read twice"
    finally:
        if modern is not None:
            modern.close()
        classic.close()
