"""DescribeCluster v2 (KIP-1073) in cluster mode: a broker whose lease lapsed stays registered and
is a fenced broker, listed (is_fenced) only when include_fenced_brokers asks for it, as a Kafka
broker stays registered, fenced, after it stops; it is unfenced again when it registers anew."""

from __future__ import annotations

import pytest
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.static.primitive import i8

from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.e2e.test_kafka_tools import tool
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
