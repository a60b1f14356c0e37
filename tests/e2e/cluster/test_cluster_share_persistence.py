"""A share group's membership is persisted in __consumer_offsets (Kafka 4.4's ShareGroup* records),
so a cluster failover of its group coordinator keeps it: after a kill -9 of the coordinator's
broker, the group whose member left (no share-partition state: nothing was produced) is listed by
the next coordinator as an Empty share group, and kafka-share-groups describes it. The next
coordinator then alters the group's start offset past the partition's end: it is brought back to
the high watermark, which it asks of the partition's leader."""

from __future__ import annotations

import confluent_kafka as ck
import pytest
from kio.schema.alter_share_group_offsets.v0 import request as alter
from kio.schema.describe_share_group_offsets.v1 import request as describe
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.e2e.cluster.test_cluster_coordinators import coordinator_of, create_topic
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
GROUP = 0  # FindCoordinator's key type of groups


def listed(cluster: Cluster) -> list[tuple[str, str, str]]:
    out = []
    for node_id in cluster.live():
        with RawClient(cluster.brokers[node_id].bootstrap) as client:
            answer = client.request(ListGroupsRequest(types_filter=("share",)))
        out += [(g.group_id, g.group_state, g.group_type) for g in answer.groups]
    return out


def test_an_empty_share_group_survives_the_loss_of_its_group_coordinator(cluster: Cluster) -> None:
    cluster.start(1, 2, 3)
    create_topic(cluster, "st", 2)
    member = ck.ShareConsumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "kept"})
    member.subscribe(["st"])
    try:
        member.poll(2.0)  # joins the group
        wait_until(lambda: listed(cluster) == [("kept", "Stable", "share")], "the member in the group")
    finally:
        member.close()
    assert listed(cluster) == [("kept", "Empty", "share")]
    coordinator = coordinator_of(cluster, GROUP, "kept")
    cluster.kill(coordinator)
    assert coordinator_of(cluster, GROUP, "kept") != coordinator
    wait_until(lambda: listed(cluster) == [("kept", "Empty", "share")], "the group listed by its next coordinator")
    described = run_tool("kafka-share-groups", "--bootstrap-server", cluster.bootstrap(), "--describe",
                         "--group", "kept", "--state")
    rows = [line.split() for line in described.stdout.splitlines() if line.strip()]
    assert len(rows) == 2 and rows[1][0] == "kept" and "Empty" in rows[1], described.stdout + described.stderr
    assert start_offset_after_altering(cluster, 1000) == 3


def start_offset_after_altering(cluster: Cluster, offset: int) -> int:
    """st-0 holds 3 records; the group's start offset there once altered to `offset`."""
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap()})
    for i in range(3):
        producer.produce("st", value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    with RawClient(cluster.brokers[coordinator_of(cluster, GROUP, "kept")].bootstrap) as client:
        altered = client.request(alter.AlterShareGroupOffsetsRequest(group_id=GroupId("kept"), topics=(
            alter.AlterShareGroupOffsetsRequestTopic(topic_name=TopicName("st"), partitions=(
                alter.AlterShareGroupOffsetsRequestPartition(partition_index=i32(0), start_offset=i64(offset)),)),)))
        assert [p.error_code for t in altered.responses for p in t.partitions] == [0], altered
        described = client.request(describe.DescribeShareGroupOffsetsRequest(groups=(
            describe.DescribeShareGroupOffsetsRequestGroup(group_id=GroupId("kept"), topics=(
                describe.DescribeShareGroupOffsetsRequestTopic(topic_name=TopicName("st"),
                                                               partitions=(i32(0),)),)),)))
    [partition] = [p for g in described.groups for t in g.topics for p in t.partitions]
    return int(partition.start_offset)
