"""Share groups on three brokers over one PostgreSQL (KIP-932 in cluster mode): the share-partition
lives at its partition's leader, its state at the share coordinator of its key (the leader of its
__share_group_state partition, which FindCoordinator's SHARE key type names), the group at its
group coordinator. A kill -9 of the share coordinator's broker with records in flight: the next
share coordinator replays the state, no acknowledged record comes back and every acquired but
unacknowledged one does, with its delivery count."""

from __future__ import annotations

import subprocess
import sys

import confluent_kafka as ck
import pytest

from tests.e2e.cluster.conftest import WAIT_S, Cluster
from tests.e2e.cluster.test_cluster_coordinators import coordinator_of, create_topic
from tests.e2e.test_share_groups_tools import MEMBER, poll_values
from tests.kafka_tools import run_tool

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


def consume(cluster: Cluster, wanted: int) -> list[ck.Message]:
    """`wanted` records of st for the group, ACCEPTed, and then no more within 3 s."""
    consumer = ck.ShareConsumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "crash",
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe(["st"])
    try:
        got = poll_values(consumer, wanted, ck.AcknowledgeType.ACCEPT)
        assert all(tp.error is None for tp in consumer.commit_sync())
        assert poll_values(consumer, 1, give_up_s=3) == []
    finally:
        consumer.close()
    return got
