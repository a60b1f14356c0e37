"""DescribeLogDirs in a cluster: each broker lists the partitions it has a log of, those it leads, as
Kafka's ReplicaManager.describeLogDirs lists the logs a broker hosts. It used to fail the whole
request with NOT_LEADER_OR_FOLLOWER on the first partition led elsewhere (sarama's
TestFuncAdminDescribeLogDirs against five brokers)."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic, DescribeLogDirsRequest

from tests.e2e.cluster.conftest import Cluster
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e


def log_dirs(cluster: Cluster, node_id: int, topics: tuple[DescribableLogDirTopic, ...] | None) -> dict[str, set[int]]:
    with RawClient(cluster.brokers[node_id].bootstrap) as client:
        r = client.request(DescribeLogDirsRequest(topics=topics))
    assert r.error_code == 0
    (result,) = r.results
    assert result.error_code == 0 and result.total_bytes > 0
    listed = {t.name: {p.partition_index for p in t.partitions} for t in result.topics}
    assert all(listed.values()), "a topic with no partition here is left out, as Kafka leaves it out"
    return listed


def test_each_broker_lists_the_partitions_it_leads(cluster: Cluster) -> None:
    cluster.start(1, 2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    for future in admin.create_topics([NewTopic("ld", 4, 2)]).values():
        future.result(30)
    leaders = cluster.settled("ld")
    led = {n: {p for p, (leader, _) in leaders.items() if leader == n} for n in (1, 2)}
    for n in (1, 2):
        assert log_dirs(cluster, n, None).get("ld") == led[n]
        asked = log_dirs(cluster, n, (DescribableLogDirTopic(topic="ld", partitions=(0, 1, 2, 3)),))
        assert asked == {"ld": led[n]}
