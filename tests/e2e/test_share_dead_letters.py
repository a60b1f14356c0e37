"""Dead letters of share groups (KIP-1191, share.version 2) with real clients: Kafka 4.4's
KafkaShareConsumer REJECTs records and lets others run out of deliveries by lock timeout, and
confluent-kafka reads them from the DLQ topic with Kafka's headers; the topic made by
errors.deadletterqueue.auto.create.topics.enable; a name starting with "__" refused with Kafka's
message; an unusable topic and share.version 1 archive without dead letters; and a kill -9 after
the REJECT was answered neither loses nor repeats a dead letter."""

from __future__ import annotations

import subprocess
import sys
import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess
from tests.e2e.test_share_groups_java import SETTINGS, compiled, produce, run_check  # noqa: F401 (a fixture)
from tests.e2e.test_share_groups_tools import GIVE_UP_S, MEMBER, poll_values, share_consumer, tool

pytestmark = pytest.mark.e2e

REJECTED, EXCEEDED = "Offset rejected by client.", "Offset delivery count exceeded the threshold."


def create_dlq(bootstrap: str, name: str, partitions: int, enabled: bool = True) -> None:
    configs = {"errors.deadletterqueue.group.enable": "true"} if enabled else {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(30)


def read_topic(bootstrap: str, topic: str, wanted: int) -> list[ck.Message]:
    """The topic's records from the start: `wanted` of them, then whatever else comes within 1 s."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out: list[ck.Message] = []
    end = time.monotonic() + GIVE_UP_S
    try:
        while len(out) < wanted and time.monotonic() < end:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m)
        extra_until = time.monotonic() + 1
        while time.monotonic() < extra_until:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m)
    finally:
        consumer.close()
    return out


def letter(m: ck.Message) -> tuple[str, int, dict[str, str]]:
    return (m.value().decode() if m.value() is not None else "", m.partition(),
            {k: v.decode() for k, v in m.headers() or []})


def expected_letter(i: int) -> tuple[str, int, dict[str, str]]:
    """Record i is at offset i of partition 0 (so in the DLQ topic's partition 0); even ones were
    rejected, odd ones ran out of deliveries (limit 2)."""
    return (str(i), 0, {
        "__dlq.errors.topic": "st", "__dlq.errors.partition": "0", "__dlq.errors.offset": str(i),
        "__dlq.errors.group": "sg", "__dlq.errors.delivery.count": "1" if i % 2 == 0 else "2",
        "__dlq.errors.message": REJECTED if i % 2 == 0 else EXCEEDED})


@pytest.mark.parametrize("auto_create", [False, True])
def test_java_rejected_and_timed_out_records_reach_the_dlq_topic(compiled: str, broker_factory,  # type: ignore[no-untyped-def]  # noqa: F811
                                                                 auto_create: bool) -> None:
    broker = broker_factory(SETTINGS | ({"errors.deadletterqueue.auto.create.topics.enable": "true"}
                                        if auto_create else {}))
    produce(broker.bootstrap, 20, 1)
    if not auto_create:
        create_dlq(broker.bootstrap, "dlq.st", 3)
    assert run_check(compiled, broker.bootstrap, "dead_letters", 20) == {
        "first": "20 [1]", "held": "10 [2]", "late_ack_failed": "true", "after": "0"}
    letters = sorted((letter(m) for m in read_topic(broker.bootstrap, "dlq.st", 20)), key=lambda x: int(x[0]))
    assert letters == [expected_letter(i) for i in range(20)]
    if auto_create:
        described = tool(broker, "kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", "dlq.st")
        assert "errors.deadletterqueue.group.enable=true" in described.stdout


def set_group(broker: BrokerProcess, group: str, *configs: str) -> subprocess.CompletedProcess[str]:
    return tool(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
                "--add-config", ",".join(configs))


def reject_all(broker: BrokerProcess, group: str, records: int) -> None:
    with share_consumer(broker, group, explicit=True) as consumer:
        assert len(poll_values(consumer, records, ck.AcknowledgeType.REJECT)) == records
        assert all(tp.error is None for tp in consumer.commit_sync())


def test_dlq_topic_names_and_share_version_1(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    produce(broker.bootstrap, 4, 1)
    refused = set_group(broker, "g1", "errors.deadletterqueue.topic.name=__dlq")
    said = refused.stdout + refused.stderr
    assert "InvalidConfigurationException: errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'" \
        in said
    # a topic without errors.deadletterqueue.group.enable, and one without the "dlq." prefix
    create_dlq(broker.bootstrap, "dlq.off", 1, enabled=False)
    create_dlq(broker.bootstrap, "nodlq", 1)
    for group, topic, message in (
            ("g1", "dlq.off", "DLQ is not enabled on configured DLQ topic for share group: g1, topic: dlq.off."),
            ("g2", "nodlq", "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: "
                            "g2, topic: nodlq, prefix: dlq.")):
        assert set_group(broker, group, "share.auto.offset.reset=earliest",
                         f"errors.deadletterqueue.topic.name={topic}").returncode == 0
        reject_all(broker, group, 4)
        assert broker.wait_for_log(message) is not None
        assert read_topic(broker.bootstrap, topic, 0) == []
    # share.version 1: share groups without dead letters
    create_dlq(broker.bootstrap, "dlq.v1", 1)
    assert tool(broker, "kafka-features", "downgrade", "--feature", "share.version=1").returncode == 0
    assert set_group(broker, "g3", "share.auto.offset.reset=earliest",
                     "errors.deadletterqueue.topic.name=dlq.v1").returncode == 0
    reject_all(broker, "g3", 4)
    assert read_topic(broker.bootstrap, "dlq.v1", 0) == []


def test_kill_9_after_rejects_neither_loses_nor_repeats_a_dead_letter(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    produce(broker.bootstrap, 0, 1)
    create_dlq(broker.bootstrap, "dlq.st", 1)
    assert set_group(broker, "crash", "share.auto.offset.reset=earliest", "share.delivery.count.limit=2",
                     "errors.deadletterqueue.topic.name=dlq.st").returncode == 0
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce("st", value=b"%d" % i)
    assert producer.flush(30) == 0
    with subprocess.Popen([sys.executable, "-c", MEMBER, broker.bootstrap, "REJECT"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as member:
        assert member.stdout is not None
        assert member.stdout.readline().split() == ["acquired", "20", "committed", "[True]"]
        broker.kill()  # 0-9 rejected (tests/e2e/test_share_groups_tools.py's MEMBER) and answered, 10-19 acquired
        member.kill()
    broker.start()
    with share_consumer(broker, "crash", explicit=True) as after:
        again = poll_values(after, 10, ck.AcknowledgeType.RELEASE)  # their second delivery: the limit
        assert all(tp.error is None for tp in after.commit_sync())
        assert poll_values(after, 1, give_up_s=2) == []
    assert sorted((int(m.value()), m.delivery_count()) for m in again) == [(i, 2) for i in range(10, 20)]
    letters = read_topic(broker.bootstrap, "dlq.st", 20)
    headers = [letter(m)[2] for m in letters if m.value() is None and m.key() is None]
    assert sorted((int(h["__dlq.errors.offset"]), h["__dlq.errors.message"]) for h in headers) == \
        [(i, REJECTED if i < 10 else EXCEEDED) for i in range(20)]
