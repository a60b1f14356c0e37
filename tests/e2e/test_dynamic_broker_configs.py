"""Dynamic broker configs with real clients: Kafka's CLI (`kafka-configs --entity-type brokers`,
per broker and `--entity-default`) and confluent-kafka's AdminClient (incremental_alter_configs,
describe_configs on BROKER resources); a log default changed live reaches a topic; the configs
survive kill -9 and restart."""

from __future__ import annotations

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import config_lines, failing, tool


def _describe(admin: AdminClient, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ConfigResource.Type.BROKER, name)
    return admin.describe_configs([resource])[resource].result(timeout=30)  # type: ignore[no-any-return]


def _topic_config(admin: AdminClient, topic: str, key: str) -> ConfigEntry:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(timeout=30)[key]


def test_kafka_configs_and_admin_client_change_broker_configs(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker: BrokerProcess = broker_factory({"log.retention.ms": "100000"})
    tool(broker, "kafka-topics", "--create", "--topic", "dyn-a")
    tool(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
         "--add-config", "log.retention.ms=50000,log.cleanup.policy=[compact,delete]")
    tool(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
         "--add-config", "message.max.bytes=500000")
    described = config_lines(tool(broker, "kafka-configs", "--describe", "--entity-type", "brokers",
                                  "--entity-name", "1"))
    assert described["message.max.bytes"].startswith("500000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:")
    assert "log.retention.ms" not in described  # without --all: this broker's own dynamic configs only
    default = config_lines(tool(broker, "kafka-configs", "--describe", "--entity-type", "brokers", "--entity-default"))
    assert default == {"log.cleanup.policy": "compact,delete sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                                             "log.cleanup.policy=compact,delete}",
                       "log.retention.ms": "50000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                                           "log.retention.ms=50000}"}
    everything = config_lines(tool(broker, "kafka-configs", "--describe", "--all", "--entity-type", "brokers",
                                   "--entity-name", "1"))
    assert everything["log.retention.ms"] == ("50000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                                              "log.retention.ms=50000, STATIC_BROKER_CONFIG:log.retention.ms=100000, "
                                              "DEFAULT_CONFIG:log.retention.hours=168}")
    refusal = failing(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
                      "--add-config", "log.dirs=/elsewhere")
    assert "Cannot update these configs dynamically: [log.dirs]" in refusal
    # Kafka 4 registers a broker's endpoints at start-up and refuses a new advertised.listeners (eosbroker
    # stored it, said "Completed", and went on advertising the old address).
    refusal = failing(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
                      "--add-config", "advertised.listeners=PLAINTEXT://127.0.0.1:1")
    assert "Cannot update these configs dynamically: [advertised.listeners]" in refusal, refusal

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    retention = _topic_config(admin, "dyn-a", "retention.ms")
    assert (retention.value, retention.source) == ("50000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    # librdkafka names brokers by id only (it refuses "" client-side): the default goes by the CLI
    resource = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("sasl.enabled.mechanisms", "PLAIN", incremental_operation=AlterConfigOpType.APPEND)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    mine = _describe(admin, "1")
    assert mine["advertised.listeners"].is_read_only and not mine["listeners"].is_read_only
    assert (mine["log.segment.bytes"].value, mine["log.segment.bytes"].source) == \
        ("1048576", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert mine["sasl.enabled.mechanisms"].value == "GSSAPI,PLAIN"
    assert (mine["log.retention.ms"].value, mine["log.retention.ms"].source) == \
        ("50000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert mine["log.dirs"].is_read_only and not mine["log.segment.bytes"].is_read_only
    assert _topic_config(admin, "dyn-a", "segment.bytes").value == "1048576"
    tool(broker, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
         "--delete-config", "log.retention.ms")
    assert _topic_config(admin, "dyn-a", "retention.ms").value == "100000"  # back to the static value

    broker.restart(kill=True)  # kill -9: the stored configs are what the broker starts with
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    mine = _describe(admin, "1")
    assert (mine["message.max.bytes"].value, mine["message.max.bytes"].source) == \
        ("500000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert mine["log.segment.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert _topic_config(admin, "dyn-a", "cleanup.policy").value == "compact,delete"
    # the per-broker message.max.bytes is the topic's max.message.bytes (keyed: the topic is compacted)
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 2_000_000})
    producer.produce("dyn-a", b"x" * 600_000, b"key", on_delivery=lambda err, _msg: errors.append(err))
    producer.produce("dyn-a", b"x" * 400_000, b"key", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    assert [e.code() if e else None for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE, None]
