"""A share consumer that acknowledges its records and closes does not see them again (confluent-kafka's
own integration tests test_explicit_accept_prevents_redelivery and ..._reject_...). librdkafka's close
sends the leave heartbeat and the final ShareAcknowledge (epoch -1, with the acknowledgements) at
once; the broker released the leaving member's records at the heartbeat, so the acknowledgements that
came a millisecond later were refused and the next consumer of the group got every record again.
Kafka 4.4 passes both tests."""

from __future__ import annotations

import datetime
import time
import uuid

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kio.schema.share_fetch.v1 import request as fetch_req
from kio.static.primitive import i32

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.e2e.test_fetch_topic_ids import topic_id
from tests.e2e.test_share_group_init import produce
from tests.e2e.test_share_groups_tools import GIVE_UP_S
from tests.e2e.txn_clients import create_topics
from tests.kafka_wire import RawClient

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



def raw_share_fetch(c: RawClient, group: str, tid: uuid.UUID, epoch: int, max_bytes: int) -> int:
    """Records acquired by one ShareFetch of member m1 from partition 0."""
    fetched = c.request(fetch_req.ShareFetchRequest(
        group_id=group, member_id="m1", share_session_epoch=i32(epoch),
        max_wait=datetime.timedelta(milliseconds=100), min_bytes=i32(1), max_bytes=i32(max_bytes),
        max_records=i32(100), batch_size=i32(100), forgotten_topics_data=(),
        topics=(fetch_req.FetchTopic(topic_id=tid, partitions=(
            fetch_req.FetchPartition(partition_index=i32(0), acknowledgement_batches=()),)),)))
    [partition] = fetched.responses[0].partitions
    assert (fetched.error_code, partition.error_code) == (ErrorCode.none, ErrorCode.none), fetched
    return sum(r.last_offset - r.first_offset + 1 for r in partition.acquired_records)


def test_share_fetch_max_bytes_0_acquires_nothing(broker: BrokerProcess) -> None:
    """librdkafka's 0180 test_fetch_max_bytes_zero_returns_no_records, which Kafka 4.4 passes: a
    ShareFetch with MaxBytes 0 acquires no records (the broker read one batch whatever the limit)."""
    topic = group = "max-bytes-0"
    create_topics(broker.bootstrap, [topic], 1)
    earliest(broker, group)
    produce(broker, topic, [b"warm"], 0)
    first = explicit(broker, group, topic)  # the group's share-partition initialized, "warm" consumed
    warm: list[ck.Message] = []
    end = time.monotonic() + GIVE_UP_S
    while not warm and time.monotonic() < end:
        warm = [m for m in first.poll(0.5) if m.error() is None]
    for message in warm:
        first.acknowledge(message, ck.AcknowledgeType.ACCEPT)
    first.close()
    assert [m.value() for m in warm] == [b"warm"]
    produce(broker, topic, [b"m%d" % i for i in range(10)], 0)
    with RawClient(broker.bootstrap) as c:
        tid = topic_id(c, topic)
        assert raw_share_fetch(c, group, tid, 0, 0) == 0
        assert raw_share_fetch(c, group, tid, 1, 1 << 20) == 10
