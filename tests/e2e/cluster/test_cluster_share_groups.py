"""Share groups on three brokers over one PostgreSQL (KIP-932 in cluster mode): the share-partition
lives at its partition's leader, its state at the share coordinator of its key (the leader of its
__share_group_state partition, which FindCoordinator's SHARE key type names), the group at its
group coordinator. A kill -9 of the share coordinator's broker with records in flight: the next
share coordinator replays the state, no acknowledged record comes back and every acquired but
unacknowledged one does, with its delivery count. The share coordinator fences a share-partition
leader older than the last one that read or wrote the state (FENCED_LEADER_EPOCH), and that leader
stops serving it: it delivers nothing. It refuses to read or write the state of a share-partition
never initialized (INVALID_REQUEST, Kafka's messages)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import confluent_kafka as ck
import pytest
from kio.schema.read_share_group_state.v0 import request as read_req
from kio.schema.write_share_group_state.v0 import request as write_req
from kio.static.primitive import i32, i64

from protocol.errors import ErrorCode
from tests.e2e.cluster.conftest import WAIT_S, Cluster
from tests.e2e.cluster.test_cluster_coordinators import coordinator_of, create_topic
from tests.e2e.test_share_groups_tools import MEMBER, poll_values
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
SHARE = 2  # FindCoordinator's key type of share-partition keys
SETTINGS = {"request.timeout.ms": "2000", "share.coordinator.state.topic.num.partitions": "4",
            "group.share.min.record.lock.duration.ms": "1000"}


def test_share_group_survives_the_loss_of_its_share_coordinator(cluster: Cluster) -> None:
    cluster.start(1, 2, 3, settings=SETTINGS)
    [leader] = create_topic(cluster, "st", 1).values()
    assert run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap(), "--alter", "--entity-type", "groups",
                    "--entity-name", "crash", "--add-config",
                    "share.auto.offset.reset=earliest,share.record.lock.duration.ms=2000").returncode == 0
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap()})
    for i in range(20):
        producer.produce("st", value=b"%d" % i, partition=0)
    assert producer.flush(WAIT_S) == 0
    topic_id = cluster.metadata(leader, "st").topics[0].topic_id
    # the member (tests/e2e/test_share_groups_tools.py) ACCEPTs 0-9 of the 20 it acquires, holds 10-19
    with subprocess.Popen([sys.executable, "-c", MEMBER, cluster.bootstrap()], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as member:
        assert member.stdout is not None
        assert member.stdout.readline().split() == ["acquired", "20", "committed", "[True]"]
        share_coordinator = coordinator_of(cluster, SHARE, f"crash:{topic_id}:0")
        cluster.kill(share_coordinator)
        member.kill()
    assert share_coordinator not in cluster.live()
    again = consume(cluster, 10)
    assert sorted((int(m.value()), m.delivery_count()) for m in again) == [(i, 2) for i in range(10, 20)]
    # Then the partition's leader goes too: the next one reads the state from the share
    # coordinator, so only records produced since are delivered (the group reads from earliest).
    if leader in cluster.live():
        cluster.kill(leader)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap()})
    for i in range(20, 25):
        producer.produce("st", value=b"%d" % i, partition=0)
    assert producer.flush(WAIT_S) == 0
    assert sorted((int(m.value()), m.delivery_count()) for m in consume(cluster, 5)) == [(i, 1) for i in range(20, 25)]
    assert any(cluster.brokers[n].logged("share coordinator of __share_group_state") for n in cluster.live())


def test_the_share_coordinator_fences_an_older_share_partition_leader(cluster: Cluster) -> None:
    cluster.start(1, 2, settings=SETTINGS)
    [leader] = create_topic(cluster, "st", 1).values()
    assert run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap(), "--alter", "--entity-type", "groups",
                    "--entity-name", "fence", "--add-config", "share.auto.offset.reset=earliest").returncode == 0
    produce(cluster, range(3))
    assert len(consume(cluster, 3, "fence")) == 3  # the state is written at the partition's leader epoch
    [(_, epoch)] = cluster.leaders("st", leader).values()
    topic_id = cluster.metadata(leader, "st").topics[0].topic_id
    with RawClient(cluster.brokers[coordinator_of(cluster, SHARE, f"fence:{topic_id}:0")].bootstrap) as client:
        assert read_state(client, topic_id, epoch - 1).error_code == ErrorCode.fenced_leader_epoch
        newer = read_state(client, topic_id, epoch + 2)  # as a newer leader would: recorded
        assert (newer.error_code, newer.start_offset) == (ErrorCode.none, 3)
        stale = write_req.PartitionData(partition=i32(0), state_epoch=newer.state_epoch, leader_epoch=i32(epoch + 1),
                                        start_offset=i64(0), state_batches=())
        answer = client.request(write_req.WriteShareGroupStateRequest(group_id="fence", topics=(
            write_req.WriteStateData(topic_id=topic_id, partitions=(stale,)),)))
        assert answer.results[0].partitions[0].error_code == ErrorCode.fenced_leader_epoch
    # the partition's leader (at `epoch`) is older now: its share-partition went when the group's
    # last share session there ended (as Kafka's onGroupEmpty), and reading the state again it is
    # fenced, so it delivers nothing
    produce(cluster, range(3, 5))
    consumer = share_consumer(cluster, "fence")
    try:
        assert poll_values(consumer, 1, ck.AcknowledgeType.ACCEPT, give_up_s=5) == []
    finally:
        consumer.close()
    assert cluster.brokers[leader].logged(f"fenced at leader epoch {epoch}")
    with RawClient(cluster.brokers[coordinator_of(cluster, SHARE, f"fence:{topic_id}:0")].bootstrap) as client:
        assert read_state(client, topic_id, epoch + 2).start_offset == 3
    # a share-partition its group coordinator never initialized: refused with Kafka's messages
    with RawClient(cluster.brokers[coordinator_of(cluster, SHARE, f"cold:{topic_id}:0")].bootstrap) as client:
        cold = read_state(client, topic_id, epoch, "cold")
        assert (cold.error_code, cold.error_message, cold.state_epoch, cold.start_offset) == (
            ErrorCode.invalid_request, "Read operation on uninitialized share partition not allowed.", 0, 0)
        write = write_req.PartitionData(partition=i32(0), state_epoch=i32(0), leader_epoch=i32(epoch),
                                        start_offset=i64(0), state_batches=())
        answer = client.request(write_req.WriteShareGroupStateRequest(group_id="cold", topics=(
            write_req.WriteStateData(topic_id=topic_id, partitions=(write,)),))).results[0].partitions[0]
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.invalid_request, "Write operation on uninitialized share partition not allowed.")


def read_state(client: RawClient, topic_id: object, leader_epoch: int, group: str = "fence") -> Any:
    request = read_req.ReadShareGroupStateRequest(group_id=group, topics=(read_req.ReadStateData(
        topic_id=topic_id, partitions=(read_req.PartitionData(partition=i32(0), leader_epoch=i32(leader_epoch)),)),))  # type: ignore[arg-type]
    return client.request(request).results[0].partitions[0]


def produce(cluster: Cluster, values: range) -> None:
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap()})
    for i in values:
        producer.produce("st", value=b"%d" % i, partition=0)
    assert producer.flush(WAIT_S) == 0


def share_consumer(cluster: Cluster, group: str) -> ck.ShareConsumer:
    consumer = ck.ShareConsumer({"bootstrap.servers": cluster.bootstrap(), "group.id": group,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe(["st"])
    return consumer


def consume(cluster: Cluster, wanted: int, group: str = "crash") -> list[ck.Message]:
    """`wanted` records of st for the group, ACCEPTed, and then no more within 3 s."""
    consumer = share_consumer(cluster, group)
    try:
        got = poll_values(consumer, wanted, ck.AcknowledgeType.ACCEPT)
        assert all(tp.error is None for tp in consumer.commit_sync())
        assert poll_values(consumer, 1, give_up_s=3) == []
    finally:
        consumer.close()
    return got
