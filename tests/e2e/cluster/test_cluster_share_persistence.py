"""A share group's membership is persisted in __consumer_offsets (Kafka 4.4's ShareGroup* records),
so a cluster failover of its group coordinator keeps it: after a kill -9 of the coordinator's
broker, the group whose member left (no share-partition state: nothing was produced) is listed by
the next coordinator as an Empty share group, and kafka-share-groups describes it."""

from __future__ import annotations

import confluent_kafka as ck
import pytest
from kio.schema.list_groups.v5.request import ListGroupsRequest

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
