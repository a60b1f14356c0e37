"""InitializeShareGroupState (KIP-932): the group coordinator initializes a share-partition at its
share coordinator before assigning it, as Kafka 4.4 does, and a share-partition never initialized
is not served. A partition added to a topic the group already reads starts at offset 0 (Kafka 4.4
initializes such partitions so), so what was produced into it before the members were assigned it
is delivered, even under share.auto.offset.reset=latest (confluent-kafka's ShareConsumer). A raw
ShareFetch for a group that never initialized the partition gets UNKNOWN_SERVER_ERROR "Read
operation on uninitialized share partition not allowed." (Kafka's SharePartition maps its share
coordinator's INVALID_REQUEST so, read from its 4.4 code), and an acknowledgement for it
UNKNOWN_TOPIC_OR_PARTITION (Kafka has no share-partition to apply it to)."""

from __future__ import annotations

import datetime
import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewPartitions
from kio.schema.describe_share_group_offsets.v1 import request as describe_req
from kio.schema.share_acknowledge.v1 import request as ack_req
from kio.schema.share_fetch.v1 import request as fetch_req
from kio.schema.types import GroupId
from kio.static.primitive import i8, i32, i64

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.e2e.test_fetch_topic_ids import topic_id
from tests.e2e.test_share_groups_tools import GIVE_UP_S
from tests.e2e.txn_clients import create_topics, plain_producer
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e


def produce(broker: BrokerProcess, topic: str, values: list[bytes], partition: int) -> None:
    producer = plain_producer(broker.bootstrap)
    for value in values:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


def test_a_partition_added_to_a_topic_the_group_reads_starts_at_offset_0(broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, ["grow"], 1)
    consumer = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "grow"})  # latest
    consumer.subscribe(["grow"])
    try:
        # the group reads partition 0 from where it was when first read: produce until one arrives
        got: list[ck.Message] = []
        end = time.monotonic() + GIVE_UP_S
        while not got and time.monotonic() < end:
            produce(broker, "grow", [b"warm"], 0)
            got = [m for m in consumer.poll(0.5) if m.error() is None]
        assert got, "nothing arrived from partition 0"
        # a second partition, written before the group's next heartbeat can have it assigned
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([NewPartitions("grow", 2)])["grow"].result(30)
        produce(broker, "grow", [b"new-%d" % i for i in range(5)], 1)
        added: list[bytes] = []
        end = time.monotonic() + GIVE_UP_S
        while len(added) < 5 and time.monotonic() < end:
            added += [m.value() for m in consumer.poll(0.5) if m.error() is None and m.partition() == 1]
        assert sorted(added) == [b"new-%d" % i for i in range(5)]
        with RawClient(broker.bootstrap) as c:
            assert wait_for_states(c, "grow", 2) == 2
    finally:
        consumer.close()
    # its deletion takes the group's share-partition states with it (tests/coordinator/share/
    # test_initialize.py checks they are gone: DescribeShareGroupOffsets names no deleted topic);
    # the broker fixture fails the test on an error logged meanwhile
    admin.delete_topics(["grow"])["grow"].result(30)


def wait_for_states(c: RawClient, group: str, wanted: int) -> int:
    """How many share-partitions DescribeShareGroupOffsets lists for the group, once it is `wanted`
    (or GIVE_UP_S has passed)."""
    end = time.monotonic() + GIVE_UP_S
    while True:
        answer = c.request(describe_req.DescribeShareGroupOffsetsRequest(groups=(
            describe_req.DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=None),)))
        found = sum(len(t.partitions) for g in answer.groups for t in g.topics)
        if found == wanted or time.monotonic() > end:
            return found
        time.sleep(0.2)


def test_a_share_partition_never_initialized_is_not_served(broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, ["cold"], 1)
    produce(broker, "cold", [b"v"], 0)
    with RawClient(broker.bootstrap) as c:
        tid = topic_id(c, "cold")
        fetched = c.request(fetch_req.ShareFetchRequest(
            group_id="nobody", member_id="m1", share_session_epoch=i32(0),
            max_wait=datetime.timedelta(milliseconds=10), min_bytes=i32(1), max_bytes=i32(1 << 20),
            max_records=i32(10), batch_size=i32(10), forgotten_topics_data=(),
            topics=(fetch_req.FetchTopic(topic_id=tid, partitions=(
                fetch_req.FetchPartition(partition_index=i32(0), acknowledgement_batches=()),)),)))
        [partition] = fetched.responses[0].partitions
        assert (fetched.error_code, partition.error_code, partition.error_message, partition.acquired_records) == (
            ErrorCode.none, ErrorCode.unknown_server_error,
            "Read operation on uninitialized share partition not allowed.", ())
        acked = c.request(ack_req.ShareAcknowledgeRequest(
            group_id="nobody", member_id="m1", share_session_epoch=i32(1), topics=(ack_req.AcknowledgeTopic(
                topic_id=tid, partitions=(ack_req.AcknowledgePartition(
                    partition_index=i32(0), acknowledgement_batches=(ack_req.AcknowledgementBatch(
                        first_offset=i64(0), last_offset=i64(0), acknowledge_types=(i8(1),)),)),)),)))
        assert acked.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
