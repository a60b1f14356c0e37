"""Share groups (KIP-932) with Kafka's tools and librdkafka: kafka-console-share-consumer and
kafka-share-groups (list, describe, reset offsets refused while a member is there and then done,
delete offsets, delete), confluent-kafka's ShareConsumer beside a Java KafkaShareConsumer in one
group, and a kill -9 of the broker with records in flight: no acknowledged record comes back,
every acquired-but-unacknowledged one does."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import confluent_kafka as ck
import pytest

from tests.broker_process import BrokerProcess
from tests.e2e.test_share_groups_java import SETTINGS, compiled  # noqa: F401 (a fixture)
from tests.e2e.txn_clients import create_topics, plain_producer
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e

GIVE_UP_S = 60


def tool(broker: BrokerProcess, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tool(name, "--bootstrap-server", broker.bootstrap, *args)


def setup(broker: BrokerProcess, group: str, partitions: int, records: int) -> None:
    create_topics(broker.bootstrap, ["st"], partitions)
    assert tool(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
                "--add-config", "share.auto.offset.reset=earliest").returncode == 0
    producer = plain_producer(broker.bootstrap)
    for i in range(records):
        producer.produce("st", value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


@contextmanager
def share_consumer(broker: BrokerProcess, group: str, explicit: bool = False) -> Iterator[ck.ShareConsumer]:
    consumer = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                 "share.acknowledgement.mode": "explicit" if explicit else "implicit"})
    consumer.subscribe(["st"])
    try:
        yield consumer
    finally:
        consumer.close()


def poll_values(consumer: ck.ShareConsumer, wanted: int, ack: ck.AcknowledgeType | None = None,
                give_up_s: float = GIVE_UP_S) -> list[ck.Message]:
    out: list[ck.Message] = []
    end = time.monotonic() + give_up_s
    while len(out) < wanted and time.monotonic() < end:
        for m in consumer.poll(0.2):
            assert m.error() is None, m.error()
            out.append(m)
            if ack is not None:
                consumer.acknowledge(m, ack)
    return out


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def members_line(broker: BrokerProcess, group: str, count: int) -> str:
    """kafka-share-groups --describe --members once `count` members each have partitions of their
    own (a member reports its new assignment at its next heartbeat)."""
    end = time.monotonic() + GIVE_UP_S
    while time.monotonic() < end:
        out = tool(broker, "kafka-share-groups", "--describe", "--group", group, "--members").stdout
        assigned = [row[-1].removeprefix("st:").split(",") for row in rows(out)[1:] if row[-1].startswith("st:")]
        if len(assigned) == count and len({p for a in assigned for p in a}) == sum(len(a) for a in assigned):
            return out
    return "timeout"


def test_kafka_share_groups_and_console_share_consumer(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    setup(broker, "sg", 2, 10)
    consumed = tool(broker, "kafka-console-share-consumer", "--topic", "st", "--group", "sg", "--max-messages", "10",
                    "--timeout-ms", "30000")
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()[:10], key=int) == [str(i) for i in range(10)]
    assert tool(broker, "kafka-share-groups", "--list").stdout.split() == ["sg"]
    described = tool(broker, "kafka-share-groups", "--describe", "--group", "sg").stdout
    assert rows(described) == [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"],
                               ["sg", "st", "0", "5", "0"], ["sg", "st", "1", "5", "0"]]
    with share_consumer(broker, "sg") as member:
        member.poll(0.5)  # joins the group
        assert "sg" in members_line(broker, "sg", 1)
        refused = tool(broker, "kafka-share-groups", "--reset-offsets", "--group", "sg", "--topic", "st",
                       "--to-earliest", "--execute")
        assert "Share group 'sg' is not empty." in refused.stdout + refused.stderr
    reset = tool(broker, "kafka-share-groups", "--reset-offsets", "--group", "sg", "--topic", "st", "--to-earliest",
                 "--execute")
    assert sorted(rows(reset.stdout)[1:]) == [["sg", "st", "0", "0"], ["sg", "st", "1", "0"]]
    again = tool(broker, "kafka-console-share-consumer", "--topic", "st", "--group", "sg", "--max-messages", "10",
                 "--timeout-ms", "30000", "--formatter-property", "print.delivery=true")
    assert sorted(line for line in again.stdout.splitlines() if line.startswith("Delivery:")) == sorted(
        f"Delivery:1\t{i}" for i in range(10))
    deleted_offsets = tool(broker, "kafka-share-groups", "--delete-offsets", "--group", "sg", "--topic", "st")
    assert deleted_offsets.stdout.split() == ["TOPIC", "STATUS", "st", "Successful"]
    deleted = tool(broker, "kafka-share-groups", "--delete", "--group", "sg")
    assert "Deletion of requested share groups ('sg') was successful." in deleted.stdout
    assert tool(broker, "kafka-share-groups", "--list").stdout.split() == []


def test_confluent_share_consumer_beside_a_java_member(compiled: str, broker_factory) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    broker = broker_factory(SETTINGS)
    setup(broker, "mixed", 2, 0)
    java = subprocess.Popen(["java", "-cp", compiled, "ShareCheck", broker.bootstrap, "consume", "st", "mixed", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with share_consumer(broker, "mixed") as member:
        member.poll(0.5)  # joins the group
        assert members_line(broker, "mixed", 2) != "timeout"
        producer = plain_producer(broker.bootstrap)
        for i in range(40):
            producer.produce("st", value=b"%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        mine = [int(m.value()) for m in poll_values(member, 20)]
        member.commit_sync()
    out, err = java.communicate(timeout=240)
    assert java.returncode == 0, out[-2000:] + err[-2000:]
    assert "CHECK consumed 20" in out
    assert len(mine) == 20 and len(set(mine)) == 20  # each member had one partition: 20 records each


# A member in its own process, so that it can die with the broker: it acknowledges records 0-9 of
# the 20 it acquires (ACCEPT, or the AcknowledgeType its second argument names), says so once the
# broker answered, and holds the rest until it is killed.
MEMBER = """
import sys, confluent_kafka as ck
c = ck.ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": "crash", "share.acknowledgement.mode": "explicit"})
c.subscribe(["st"])
got = []
while len(got) < 20:
    got += [m for m in c.poll(0.2) if m.error() is None]
for m in got:
    if int(m.value()) < 10:
        c.acknowledge(m, getattr(ck.AcknowledgeType, sys.argv[2] if len(sys.argv) > 2 else "ACCEPT"))
print("acquired", len(got), "committed", sorted(tp.error is None for tp in c.commit_sync()), flush=True)
sys.stdin.read()
"""


def test_kill_9_keeps_acknowledgements_and_redelivers_what_was_in_flight(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    setup(broker, "crash", 1, 20)
    with subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as member:
        assert member.stdout is not None
        assert member.stdout.readline().split() == ["acquired", "20", "committed", "[True]"]
        broker.kill()  # records 10-19 are acquired, not acknowledged
        member.kill()
    broker.start()
    with share_consumer(broker, "crash", explicit=True) as after:
        again = poll_values(after, 10, ck.AcknowledgeType.ACCEPT)
        after.commit_sync()
        assert poll_values(after, 1, give_up_s=2) == []
    assert sorted((int(m.value()), m.delivery_count()) for m in again) == [(i, 2) for i in range(10, 20)]


def test_kafka_features_turns_share_groups_off_and_on(broker: BrokerProcess) -> None:
    described = tool(broker, "kafka-features", "describe").stdout
    assert "Feature: share.version" in described and "FinalizedVersionLevel: 2" in described.split("share.version")[1]
    assert tool(broker, "kafka-features", "downgrade", "--feature", "share.version=0").stdout.strip() == \
        "share.version was downgraded to 0."
    off = tool(broker, "kafka-share-groups", "--describe", "--group", "x")
    assert "UnsupportedVersionException: The share group protocol is not enabled (share.version 0)." in off.stdout
    assert tool(broker, "kafka-features", "upgrade", "--feature", "share.version=2").returncode == 0
    on = tool(broker, "kafka-share-groups", "--describe", "--group", "x")
    assert "GroupIdNotFoundException: Group x not found." in on.stdout


def test_share_group_metrics(broker_factory) -> None:  # type: ignore[no-untyped-def]
    from tests.e2e.test_metrics import Scraper

    broker = broker_factory(SETTINGS | {"metrics.port": "0"})
    setup(broker, "metered", 1, 10)
    with share_consumer(broker, "metered", explicit=True) as consumer:
        for m in poll_values(consumer, 10):
            n = int(m.value())
            consumer.acknowledge(m, ck.AcknowledgeType.ACCEPT if n < 6 else
                                 ck.AcknowledgeType.RELEASE if n < 8 else ck.AcknowledgeType.REJECT)
        consumer.commit_sync()
        assert sorted(int(m.value()) for m in poll_values(consumer, 2, ck.AcknowledgeType.ACCEPT)) == [6, 7]
        consumer.commit_sync()
    producer = plain_producer(broker.bootstrap)
    for i in range(5):
        producer.produce("st", value=b"late %d" % i)
    assert producer.flush(30) == 0
    scraper = Scraper(broker)
    outcomes = {o: scraper.value("eosbroker_share_group_records_total", group="metered", outcome=o)
                for o in ("acquired", "acknowledged", "released", "archived")}
    assert outcomes == {"acquired": 12, "acknowledged": 8, "released": 2, "archived": 2}
    assert scraper.value("eosbroker_share_group_lag", group="metered") == 5
