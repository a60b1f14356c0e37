"""Dynamic broker configs in cluster mode: a cluster default set through one broker is in force on
the other within a poll (a topic led there takes the new log default), while a per-broker config
stays on its broker; both live in PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
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
