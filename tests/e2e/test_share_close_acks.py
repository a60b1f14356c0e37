"""A share consumer that acknowledges its records and closes does not see them again (confluent-kafka's
own integration tests test_explicit_accept_prevents_redelivery and ..._reject_...). librdkafka's close
sends the leave heartbeat and the final ShareAcknowledge (epoch -1, with the acknowledgements) at
once; the broker released the leaving member's records at the heartbeat, so the acknowledgements that
came a millisecond later were refused and the next consumer of the group got every record again.
Kafka 4.4 passes both tests."""

from __future__ import annotations

import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.broker_process import BrokerProcess
from tests.e2e.test_share_group_init import produce
from tests.e2e.test_share_groups_tools import GIVE_UP_S
from tests.e2e.txn_clients import create_topics

pytestmark = pytest.mark.e2e


def earliest(broker: BrokerProcess, group: str) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(30)


def explicit(broker: BrokerProcess, group: str, topic: str) -> ck.ShareConsumer:
    consumer = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    return consumer


@pytest.mark.parametrize("ack", [ck.AcknowledgeType.ACCEPT, ck.AcknowledgeType.REJECT])
def test_records_acknowledged_before_close_are_not_delivered_again(broker: BrokerProcess,
                                                                   ack: ck.AcknowledgeType) -> None:
    topic = group = f"close-acks-{ack}"
    create_topics(broker.bootstrap, [topic], 1)
    earliest(broker, group)
    produce(broker, topic, [b"m0", b"m1", b"m2"], 0)
    first = explicit(broker, group, topic)
    got: list[bytes] = []
    end = time.monotonic() + GIVE_UP_S
    while len(got) < 3 and time.monotonic() < end:
        for message in first.poll(0.5):
            if message.error() is None:
                got.append(message.value())
                first.acknowledge(message, ack)
    first.close()  # sends the pending acknowledgements
    assert sorted(got) == [b"m0", b"m1", b"m2"]
    second = explicit(broker, group, topic)
    again: list[bytes] = []
    end = time.monotonic() + 5
    while time.monotonic() < end:
        for message in second.poll(0.5):
            if message.error() is None:
                again.append(message.value())
                second.acknowledge(message, ck.AcknowledgeType.ACCEPT)
    second.close()
    assert again == []
