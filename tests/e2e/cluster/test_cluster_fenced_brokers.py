"""DescribeCluster v2 (KIP-1073) in cluster mode: a broker whose lease lapsed stays registered and
is a fenced broker, listed (is_fenced) only when include_fenced_brokers asks for it, as a Kafka
broker stays registered, fenced, after it stops; it is unfenced again when it registers anew."""

from __future__ import annotations

import json

import pytest
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.static.primitive import i8

from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.e2e.test_kafka_tools import tool
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e


def described(cluster: Cluster, via: int, include_fenced: bool) -> list[tuple[int, int, bool]]:
    with RawClient(cluster.brokers[via].bootstrap) as client:
        r = client.request(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(1),
                                                  include_fenced_brokers=include_fenced))
    return [(b.broker_id, b.port, b.is_fenced) for b in r.brokers]


def test_a_killed_broker_whose_lease_lapsed_is_fenced(cluster: Cluster) -> None:
    cluster.start(1, 2, 3)
    ports = {n: int(cluster.brokers[n].bootstrap.rsplit(":", 1)[1]) for n in (1, 2, 3)}
    assert described(cluster, 1, include_fenced=True) == [(n, ports[n], False) for n in (1, 2, 3)]
    cluster.kill(3)
    fenced = [(1, ports[1], False), (2, ports[2], False), (3, ports[3], True)]
    wait_until(lambda: all(described(cluster, n, include_fenced=True) == fenced for n in (1, 2)),
               "broker 3 fenced as brokers 1 and 2 see it")
    assert described(cluster, 2, include_fenced=False) == fenced[:2]
    assert cluster.brokers_seen(1) == [1, 2]  # Metadata lists live brokers only, as Kafka
    rows = tool(cluster.brokers[1], "kafka-cluster", "list-endpoints", "--include-fenced-brokers").splitlines()
    assert [line.split()[::4] for line in rows[1:]] == [["1", "unfenced"], ["2", "unfenced"], ["3", "fenced"]], rows
    rows = tool(cluster.brokers[1], "kafka-cluster", "list-endpoints").splitlines()
    assert [line.split()[0] for line in rows[1:]] == ["1", "2"], rows
    cluster.start(3)
    ports[3] = int(cluster.brokers[3].bootstrap.rsplit(":", 1)[1])
    wait_until(lambda: described(cluster, 1, include_fenced=True) == [(n, ports[n], False) for n in (1, 2, 3)],
               "broker 3 unfenced once it registered again")


def unregister(cluster: Cluster, via: int, node_id: int) -> str:
    out = run_tool("kafka-cluster", "unregister", "--bootstrap-server", cluster.brokers[via].bootstrap,
                   "--id", str(node_id))
    return out.stdout + out.stderr if out.returncode != 0 else ""


def test_kafka_cluster_unregister_removes_a_fenced_broker(cluster: Cluster) -> None:
    """Issue 36: the fenced broker's registration goes (Kafka's use of kafka-cluster unregister: a
    decommissioned broker); a live one stays, refused; an unknown id is Kafka's BROKER_ID_NOT_REGISTERED."""
    cluster.start(1, 2, 3)
    cluster.kill(3)
    wait_until(lambda: [b[2] for b in described(cluster, 1, include_fenced=True)] == [False, False, True],
               "broker 3 fenced")
    assert "Broker ID 2 is running: a live broker stays registered" in unregister(cluster, 1, 2)
    assert unregister(cluster, 1, 3) == ""
    # a snapshot read just before the removal may still name it until the next round
    wait_until(lambda: all([b[0] for b in described(cluster, n, include_fenced=True)] == [1, 2] for n in (1, 2)),
               "broker 3 unregistered as brokers 1 and 2 see it")
    assert "Broker ID 3 is not currently registered" in unregister(cluster, 2, 3)


def test_metadata_quorum_in_cluster_mode(cluster: Cluster) -> None:
    """The broker that answers is the controller (as Metadata and DescribeCluster say) and the quorum's
    one voter; the other live brokers are its observers, as a KRaft cluster's brokers are. The admin
    client asks whichever broker it likes (its least loaded), so the leader is checked against the
    voter of the same answer."""
    cluster.start(1, 2, 3)
    for via in (1, 3):
        out = tool(cluster.brokers[via], "kafka-metadata-quorum", "describe", "--status")
        status = {key: value.strip() for key, _, value in (line.partition(":") for line in out.splitlines())}
        [voter] = [v["id"] for v in json.loads(status["CurrentVoters"])]
        assert status["LeaderId"] == str(voter), out
        assert sorted(o["id"] for o in json.loads(status["CurrentObservers"])) == sorted({1, 2, 3} - {voter})
        header, *rows = tool(cluster.brokers[via], "kafka-metadata-quorum", "describe", "--replication").splitlines()
        roles = sorted((r.split()[-1], r.split()[0]) for r in rows)
        assert [role for role, _ in roles] == ["Leader", "Observer", "Observer"], rows
        assert sorted(node for _, node in roles) == ["1", "2", "3"], rows
