"""Group configs (KIP-848 GROUP config resources) with real clients: `kafka-configs --entity-type
groups` and confluent-kafka's AdminClient set and describe a group's consumer.session.timeout.ms
and consumer.heartbeat.interval.ms; Kafka's range checks refuse; the configs survive kill -9; a
consumer-protocol member of that group joins and is assigned (the heartbeat interval it is given
is checked in tests/coordinator/group/test_consumer_group_coordinator.py)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import config_lines, failing, tool


def _describe(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.GROUP, group)
    return admin.describe_configs([resource])[resource].result(timeout=30)  # type: ignore[no-any-return]


def test_group_configs_with_kafka_configs_and_the_admin_client(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker: BrokerProcess = broker_factory({"group.consumer.min.heartbeat.interval.ms": "1000"})
    tool(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", "g848",
         "--add-config", "consumer.heartbeat.interval.ms=1500")
    described = config_lines(tool(broker, "kafka-configs", "--describe", "--entity-type", "groups",
                                  "--entity-name", "g848"))
    assert described["consumer.heartbeat.interval.ms"].startswith("1500 sensitive=false")
    refusal = failing(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", "g848",
                      "--add-config", "consumer.session.timeout.ms=90000")
    assert "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms" \
        in refusal

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.GROUP, "g848", incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    broker.kill()
    broker = broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    configs = _describe(admin, "g848")
    assert {k: (configs[k].value, configs[k].source) for k in
            ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms")} == {
        "consumer.session.timeout.ms": ("50000", ConfigSource.GROUP_CONFIG.value),
        "consumer.heartbeat.interval.ms": ("1500", ConfigSource.GROUP_CONFIG.value),
        "share.session.timeout.ms": ("45000", ConfigSource.DEFAULT_CONFIG.value)}

    tool(broker, "kafka-topics", "--create", "--topic", "gc", "--partitions", "1")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g848", "group.protocol": "consumer"})
    try:
        consumer.subscribe(["gc"])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), "the consumer-protocol member got no assignment"
    finally:
        consumer.close()
