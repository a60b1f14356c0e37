"""transaction.version is the cluster's, not a broker's (issue 14): `kafka-features downgrade` sent to
one broker changes what every broker advertises in ApiVersions within a lease period, with one
finalized-features epoch that grows with each change; the level is kept in PostgreSQL, so a
broker restarted on an empty data dir, or a new one configured otherwise, finalizes the cluster's.
And ApiVersions v5 (KIP-1242) checks the node id each broker has."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.e2e.test_new_versions import api_versions_v5
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
TV = "transaction.version"


def finalized(cluster: Cluster, node_id: int) -> tuple[int, int]:
    """(transaction.version, finalized-features epoch) as broker node_id advertises them; Kafka
    leaves a feature at level 0 out of the finalized ones."""
    with RawClient(cluster.brokers[node_id].bootstrap) as client:
        r = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    levels = {f.name: f.max_version_level for f in r.finalized_features}
    return levels.get(TV, 0), r.finalized_features_epoch


def everywhere(cluster: Cluster, want: tuple[int, int]) -> None:
    wait_until(lambda: all(finalized(cluster, n) == want for n in cluster.live()),
               f"every broker advertising {TV}={want[0]} at epoch {want[1]}")


def features_tool(cluster: Cluster, via: int, *args: str) -> str:
    done = run_tool("kafka-features", "--bootstrap-server", cluster.brokers[via].bootstrap, *args, check=True)
    return str(done.stdout)


def test_update_features_on_one_broker_changes_every_brokers_level(cluster: Cluster) -> None:
    cluster.start(1, 2)
    everywhere(cluster, (2, 0))  # the first broker seeded the cluster from its start level
    assert "was downgraded to 1." in features_tool(cluster, 1, "downgrade", "--feature", f"{TV}=1")
    assert finalized(cluster, 1) == (1, 1)  # at once on the broker that took the update
    everywhere(cluster, (1, 1))  # within a lease period on the other

    # durable in the database: a broker restarted on an empty data dir, and a new broker
    # configured with 2, both finalize the cluster's 1
    cluster.kill(2, empty_data_dir=True)
    cluster.start(2)
    cluster.start(3, settings={TV: "2"})
    everywhere(cluster, (1, 1))

    # a change through another broker raises the same epoch everywhere
    features_tool(cluster, 3, "upgrade", "--feature", f"{TV}=2")
    everywhere(cluster, (2, 2))
    described = features_tool(cluster, 2, "describe")
    line = next(ln.split() for ln in described.splitlines() if ln.split()[1] == TV)
    assert line[-3:] == ["2", "Epoch:", "2"], described


def test_api_versions_v5_sends_a_client_meant_for_another_broker_to_rebootstrap(cluster: Cluster) -> None:
    """KIP-1242 across brokers: every broker has the cluster's id, and each its own node id, so a
    client that reaches broker 2 at an address it believes is broker 1's is told to rebootstrap."""
    cluster.start(1, 2)
    with RawClient(cluster.brokers[1].bootstrap) as one:
        cluster_id = one.request(build(request_schema(ApiKey.METADATA, 12), {
            "topics": [], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})).cluster_id
        assert api_versions_v5(one, cluster_id, 1).error_code is ErrorCode.none
    with RawClient(cluster.brokers[2].bootstrap) as two:
        assert api_versions_v5(two, cluster_id, 2).error_code is ErrorCode.none
        assert api_versions_v5(two, cluster_id, 1).error_code is ErrorCode.rebootstrap_required
