"""Dynamic broker configs in cluster mode: a cluster default set through one broker is in force on
the other within a poll (a topic led there takes the new log default), while a per-broker config
stays on its broker; both live in PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from tests.e2e.cluster.conftest import Cluster, wait_until
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e


def described(cluster: Cluster, node_id: int, kind: Any, name: str) -> dict[str, ConfigEntry]:
    admin = AdminClient({"bootstrap.servers": cluster.brokers[node_id].bootstrap})
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource])[resource].result(timeout=30)  # type: ignore[no-any-return]


def test_a_default_set_on_one_broker_is_in_force_on_the_other(cluster: Cluster) -> None:
    cluster.start(1, 2)
    run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap(1), "--create", "--topic", "dyn-c",
             "--partitions", "2", check=True)
    run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap(1), "--alter", "--entity-type", "brokers",
             "--entity-default", "--add-config", "log.retention.ms=70000", check=True)
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap})
    mine = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("message.max.bytes", "300000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([mine])[mine].result(timeout=30)

    def on_two() -> tuple[str, int]:
        entry = described(cluster, 2, ConfigResource.Type.BROKER, "2")["log.retention.ms"]
        return entry.value, entry.source

    wait_until(lambda: on_two() == ("70000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
               "broker 2 describing the cluster default log.retention.ms")
    two = described(cluster, 2, ConfigResource.Type.BROKER, "2")
    assert two["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value  # broker 1's own stays there
    assert described(cluster, 1, ConfigResource.Type.BROKER, "1")["message.max.bytes"].value == "300000"
    # every partition, whichever broker leads it, takes the new default
    for node_id in (1, 2):
        topic = described(cluster, node_id, ConfigResource.Type.TOPIC, "dyn-c")
        assert topic["retention.ms"].value == "70000", node_id


def test_a_client_quota_set_on_one_broker_is_in_force_on_the_other(cluster: Cluster) -> None:
    """Client quotas live beside the dynamic configs in PostgreSQL: set through broker 1, broker 2
    describes them within a poll, and a producer writing to a partition broker 2 leads is throttled."""
    cluster.start(1, 2)
    run_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap(1), "--create", "--topic", "quota-c",
             "--partitions", "2", check=True)
    run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap(1), "--alter", "--entity-type", "clients",
             "--entity-name", "slow", "--add-config", "producer_byte_rate=5000", check=True)

    def on_two() -> str:
        return run_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap(2), "--describe",
                        "--entity-type", "clients", "--entity-name", "slow", check=True).stdout.strip()

    wait_until(lambda: on_two() == "Quota configs for client-id 'slow' are producer_byte_rate=5000.0",
               "broker 2 describing the quota set through broker 1")
    wait_until(lambda: any(leader == 2 for leader, _ in cluster.settled("quota-c").values()),
               "broker 2 leading a partition of quota-c")
    led_by_two = [p for p, (leader, _) in cluster.settled("quota-c").items() if leader == 2]
    stats: list[dict[str, Any]] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap(1), "client.id": "slow", "linger.ms": 5,
                         "batch.size": 4096, "statistics.interval.ms": 200,
                         "stats_cb": lambda s: stats.append(json.loads(s))})
    for _ in range(60):
        producer.produce("quota-c", b"q" * 1000, partition=led_by_two[0])
        producer.poll(0)
    assert producer.flush(60) == 0
    producer.poll(0.5)
    throttled = {b["nodeid"]: b["throttle"]["max"] for s in stats for b in s["brokers"].values() if b["nodeid"] >= 0}
    assert throttled.get(2, 0) > 0, throttled
