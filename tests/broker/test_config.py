"""BrokerConfig from properties: Kafka's validators, time-unit precedence, listeners and the command
line, log.dirs, and the .properties format. Pure: no broker, no disk beyond tmp_path files."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path
from typing import Any

import pytest

from broker.config import PROPERTY_FIELDS, BrokerConfig, ConfigError, Spec, build_config, load_properties

NUMERIC_SPECS = [(key, f.metadata["kafka"]) for f in dataclasses.fields(BrokerConfig)
                 for key in [f.name.replace("_", ".")]
                 if "kafka" in f.metadata and f.metadata["kafka"].kind in ("INT", "LONG")]
BOOLEAN_KEYS = [f.name.replace("_", ".") for f in dataclasses.fields(BrokerConfig)
                if "kafka" in f.metadata and f.metadata["kafka"].kind == "BOOLEAN"]


def build(props: dict[str, str] | None = None, **cli: Any) -> BrokerConfig:
    config, unknown = build_config(props or {}, **cli)
    assert unknown == []
    return config


def refused(props: dict[str, str], *fragments: str, **cli: Any) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(props, **cli)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_every_property_field_declares_its_kafka_type() -> None:
    for key, name in PROPERTY_FIELDS.items():
        assert "kafka" in BrokerConfig.__dataclass_fields__[name].metadata, key


BOUNDED = [pytest.param(k, s, id=k) for k, s in NUMERIC_SPECS if s.at_least is not None]


@pytest.mark.parametrize(("key", "spec"), BOUNDED)
def test_lower_bound_as_kafka(key: str, spec: Spec) -> None:
    """atLeast(n): n is accepted, n - 1 refused with Kafka's message."""
    assert getattr(build({key: str(spec.at_least)}), PROPERTY_FIELDS[key]) == spec.at_least
    refused({key: str(spec.at_least - 1)}, f"Invalid value {spec.at_least - 1} for configuration {key}",
            f"Value must be at least {spec.at_least}")


@pytest.mark.parametrize(("key", "spec"), [pytest.param(k, s, id=k) for k, s in NUMERIC_SPECS])
def test_numbers_must_parse_and_fit_their_type(key: str, spec: Spec) -> None:
    too_big = (1 << 31) if spec.kind == "INT" else (1 << 63)
    refused({key: str(too_big)}, key, f"Not a number of type {spec.kind}")
    for bad in ("abc", "1.5", "1_000", ""):
        refused({key: bad}, key, f"Not a number of type {spec.kind}")


@pytest.mark.parametrize("key", BOOLEAN_KEYS)
def test_booleans(key: str) -> None:
    assert getattr(build({key: "FALSE"}), PROPERTY_FIELDS[key]) is False
    refused({key: "yes"}, key, "Expected value to be either true or false")


def test_the_issue_examples() -> None:
    refused({"num.partitions": "0"}, "num.partitions", "at least 1")
    refused({"message.max.bytes": "-1"}, "message.max.bytes", "at least 0")
    assert build({"message.max.bytes": "0", "num.partitions": "6"}).num_partitions == 6
    refused({"log.message.timestamp.type": "createtime"}, "String must be one of: CreateTime, LogAppendTime")
    assert build({"log.message.timestamp.type": "LogAppendTime"}).log_message_timestamp_type == "LogAppendTime"


@pytest.mark.parametrize(("props", "expected"), [
    ({}, 168 * 3_600_000),
    ({"log.retention.hours": "2"}, 2 * 3_600_000),
    ({"log.retention.minutes": "3", "log.retention.hours": "2"}, 3 * 60_000),
    ({"log.retention.ms": "5000", "log.retention.minutes": "3", "log.retention.hours": "2"}, 5000),
    ({"log.retention.ms": "-1"}, -1),
    ({"log.retention.hours": "-1"}, -1),  # any negative retention means unlimited
    ({"log.retention.minutes": "-5"}, -1),
])
def test_retention_precedence_ms_minutes_hours(props: dict[str, str], expected: int) -> None:
    assert build(props).log_retention_ms == expected


@pytest.mark.parametrize("key", ["log.retention.ms", "log.retention.minutes", "log.retention.hours"])
def test_zero_retention_is_refused(key: str) -> None:
    refused({key: "0"}, f"configuration {key}", "unlimited (-1) or, greater than or equal to 1")


def test_roll_time() -> None:
    assert build({"log.roll.hours": "2"}).log_roll_ms == 2 * 3_600_000
    assert build({"log.roll.ms": "100", "log.roll.hours": "2"}).log_roll_ms == 100
    refused({"log.roll.ms": "0"}, "log.roll.ms must be greater than or equal to 1")
    refused({"log.roll.hours": "0"}, "log.roll.hours", "at least 1")


def test_defaults_without_listeners() -> None:
    config = build()
    assert (config.host, config.port, config.advertised) == ("127.0.0.1", 9092, ("127.0.0.1", 9092))


def test_listeners_from_properties() -> None:
    config = build({"listeners": "PLAINTEXT://127.0.0.2:9093", "advertised.listeners": "PLAINTEXT://kafka.example:19093"})
    assert (config.host, config.port) == ("127.0.0.2", 9093)
    assert config.advertised == ("kafka.example", 19093)


def test_command_line_overrides_only_what_it_gives() -> None:
    props = {"listeners": "PLAINTEXT://127.0.0.2:9093", "advertised.listeners": "PLAINTEXT://kafka.example:19093"}
    config = build(props, port=0, advertised_host="other.example", host=None, advertised_port=None)
    assert (config.host, config.port) == ("127.0.0.2", 0)
    assert config.advertised == ("other.example", 19093)
    config = build(props, host="127.0.0.3", advertised_port=29093)
    assert (config.host, config.port, config.advertised) == ("127.0.0.3", 9093, ("kafka.example", 29093))


def test_advertised_defaults_to_the_bound_port() -> None:
    """Without an advertised port, the bound port is advertised (port 0 is replaced once bound)."""
    config = build(port=0, advertised_host="kafka.example")
    assert config.with_port(40000).advertised == ("kafka.example", 40000)


def test_stock_kraft_server_properties_listeners() -> None:
    """Kafka's combined-mode server.properties: the controller listener is set aside; an empty
    host binds every interface and advertises this machine's name unless told otherwise."""
    props = {"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER",
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}
    config = build(props)
    assert (config.host, config.port, config.advertised) == ("", 9092, (socket.getfqdn(), 9092))
    config = build(props | {"advertised.listeners": "PLAINTEXT://localhost:9092"})
    assert config.advertised == ("localhost", 9092)


# Kafka 4's config/server.properties (combined mode), comments left out.
KAFKA_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def test_kafkas_own_server_properties_start_a_broker(tmp_path: Path) -> None:
    """The file Kafka ships advertises its CONTROLLER listener too (KIP-853): that entry is set
    aside with the listener, and every key is known or accepted."""
    path = tmp_path / "server.properties"
    path.write_text(KAFKA_SERVER_PROPERTIES)
    config, unknown = build_config(load_properties(path))
    assert unknown == []
    assert [(listener.name, listener.port, listener.advertised) for listener in config.client_listeners] == [
        ("PLAINTEXT", 9092, ("localhost", 9092))]
    assert (config.socket_send_buffer_bytes, config.socket_receive_buffer_bytes) == (102400, 102400)
    assert (config.log_dirs, config.log_segment_bytes) == ("/tmp/kraft-combined-logs", 1073741824)


def test_an_advertised_controller_outside_controller_listener_names_is_refused() -> None:
    with pytest.raises(ConfigError, match="names CONTROLLER, which is not a listener"):
        build({"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://h:9092,CONTROLLER://h:9093"})


def test_custom_listener_name_mapped_to_plaintext() -> None:
    config = build({"listeners": "CLIENT://[::1]:9094", "listener.security.protocol.map": "CLIENT:PLAINTEXT",
                    "advertised.listeners": "CLIENT://localhost:9094"})
    assert (config.host, config.port, config.advertised) == ("::1", 9094, ("localhost", 9094))


def test_several_listeners_each_with_its_protocol_and_advertised_address() -> None:
    props = {"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_SSL://:9094,CLIENT://127.0.0.2:0",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CLIENT:SSL",
             "advertised.listeners": "PLAINTEXT://kafka.example:19092,CLIENT://client.example:29093"}
    config = build(props)
    assert [(li.name, li.security_protocol, li.host, li.port) for li in config.client_listeners] == [
        ("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092), ("SASL_SSL", "SASL_SSL", "", 9094),
        ("CLIENT", "SSL", "127.0.0.2", 0)]
    assert config.advertised == config.advertised_for("PLAINTEXT") == ("kafka.example", 19092)
    assert config.advertised_for("SASL_SSL") == (socket.getfqdn(), 9094)
    assert config.advertised_for("CLIENT") == ("client.example", 29093)
    bound = config.with_bound_ports({"PLAINTEXT": 9092, "SASL_SSL": 9094, "CLIENT": 40001})
    assert bound.client_listeners[2].port == 40001
    assert bound.advertised_for("CLIENT") == ("client.example", 29093)


def test_an_unadvertised_listener_advertises_its_bound_port() -> None:
    config = build({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}, port=0)
    bound = config.with_bound_ports({"PLAINTEXT": 40000, "SSL": 40001})
    assert (bound.port, bound.advertised) == (40000, ("127.0.0.1", 40000))
    assert bound.advertised_for("SSL") == ("127.0.0.1", 40001)


def test_command_line_overrides_the_first_listener_only() -> None:
    config = build({"listeners": "PLAINTEXT://127.0.0.2:9092,SSL://127.0.0.2:9093"}, host="127.0.0.1", port=0)
    assert [(li.host, li.port) for li in config.client_listeners] == [("127.0.0.1", 0), ("127.0.0.2", 9093)]


@pytest.mark.parametrize(("props", "cli", "fragment"), [
    ({"listeners": "PLAINTEXT://127.0.0.1:65536"}, {}, "must be between 0 and 65535"),
    ({"listeners": "PLAINTEXT://127.0.0.1:-1"}, {}, "must be between 0 and 65535"),
    ({"listeners": "127.0.0.1:9092"}, {}, "expected NAME://host:port"),
    ({"listeners": "CLIENT://:9093"}, {}, "No security protocol defined for listener CLIENT"),
    ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, {}, "each listener must have a different port"),
    ({"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"}, {}, "no client listener"),
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, {}, "different name"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, {}, "nonroutable meta-address 0.0.0.0"),
    ({"advertised.listeners": "PLAINTEXT://localhost:0"}, {}, "advertised port must be between 1 and 65535"),
    ({"advertised.listeners": "OTHER://localhost:9092"}, {}, "names OTHER, which is not a listener"),
    ({}, {"port": 65536}, "Invalid value 65536 for --port"),
    ({}, {"port": -1}, "Invalid value -1 for --port"),
    ({}, {"advertised_port": 0}, "--advertised-port: a port must be between 1 and 65535"),
    ({}, {"advertised_host": "0.0.0.0"}, "nonroutable meta-address 0.0.0.0"),
])
def test_bad_listeners_and_ports(props: dict[str, str], cli: dict[str, Any], fragment: str) -> None:
    refused(props, fragment, **cli)


def test_port_zero_is_an_ephemeral_port() -> None:
    assert build(port=0).port == 0
    assert build({"listeners": "PLAINTEXT://127.0.0.1:0"}).port == 0


def test_log_dirs() -> None:
    assert build({"log.dir": "/a"}).data_dir == Path("/a")
    assert build({"log.dirs": " /b ", "log.dir": "/a"}).data_dir == Path("/b")
    assert build({"log.dirs": "/b"}, log_dirs="/c").data_dir == Path("/c")
    refused({"log.dirs": "/a,/b"}, "lists 2 directories")
    refused({"log.dirs": " , "}, "At least one log directory must be defined")


def test_unknown_and_ignored_keys() -> None:
    _, unknown = build_config({"no.such.key": "1", "process.roles": "broker,controller", "num.io.threads": "8"})
    assert unknown == ["no.such.key"]


def test_properties_file_format(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("# comment\n! another\n\nnum.partitions=3\nlog.dirs : /tmp/x\nnode.id 7\n"
                    "listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\nempty.key\n")
    assert load_properties(path) == {"num.partitions": "3", "log.dirs": "/tmp/x", "node.id": "7",
                                     "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "empty.key": ""}


def test_missing_properties_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read --config .*nope.properties: No such file"):
        load_properties(tmp_path / "nope.properties")


def test_consumer_group_protocol_settings() -> None:
    config, _ = build_config({"group.consumer.assignors": " range , uniform",
                              "group.consumer.session.timeout.ms": "6000"})
    assert (config.group_consumer_assignors, config.group_consumer_session_timeout_ms) == ("range,uniform", 6000)
    with pytest.raises(ConfigError, match="the built-in assignors are uniform, range"):
        build_config({"group.consumer.assignors": "uniform,sticky"})
    assert build_config({})[0].group_consumer_migration_policy == "bidirectional"  # Kafka's default
    assert build_config({"group.consumer.migration.policy": "upgrade"})[0].group_consumer_migration_policy == \
        "upgrade"
    with pytest.raises(ConfigError, match="String must be one of: disabled, upgrade, downgrade, bidirectional"):
        build_config({"group.consumer.migration.policy": "sometimes"})


@pytest.mark.parametrize("name", ["org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                  "kafka.security.authorizer.AclAuthorizer"])
def test_kafkas_authorizer_names_select_the_authorizer(name: str) -> None:
    config = build({"authorizer.class.name": name, "super.users": " User:admin ;User:CN=ops,O=example;",
                    "allow.everyone.if.no.acl.found": "true"})
    assert config.authorizer_class_name == name
    assert config.super_user_principals == frozenset({"User:admin", "User:CN=ops,O=example"})
    assert config.allow_everyone_if_no_acl_found is True
    assert build().authorizer_class_name == ""  # off by default, as in Kafka


@pytest.mark.parametrize(("props", "fragment"), [
    ({"authorizer.class.name": "com.example.MyAuthorizer"}, "implements Kafka's StandardAuthorizer"),
    ({"super.users": "admin"}, "expected principals as Type:name"),
    ({"allow.everyone.if.no.acl.found": "yes"}, "Expected value to be either true or false"),
])
def test_bad_authorizer_settings_are_refused(props: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        build(props)


def test_the_cleaners_io_settings_as_kafka_and_as_the_cleaner_gets_them() -> None:
    from broker.server import cleaner_config
    from storage.cleaner.throttler import UNLIMITED

    default = cleaner_config(build())
    assert (default.threads, default.io_buffer_size, default.dedupe_buffer_load_factor) == (1, 524288, 0.9)
    assert default.io_max_bytes_per_second == UNLIMITED  # Kafka's Double.MAX_VALUE
    set_ = cleaner_config(build({"log.cleaner.io.max.bytes.per.second": "1e6", "log.cleaner.threads": "3",
                                 "log.cleaner.io.buffer.size": "65536", "log.cleaner.io.buffer.load.factor": "0.5",
                                 "log.cleaner.dedupe.buffer.size": "3000000", "log.cleaner.backoff.ms": "7"}))
    assert (set_.io_max_bytes_per_second, set_.threads, set_.io_buffer_size) == (1e6, 3, 65536)
    assert (set_.dedupe_buffer_load_factor, set_.dedupe_buffer_size, set_.backoff_ms) == (0.5, 3_000_000, 7)
    refused({"log.cleaner.io.max.bytes.per.second": "0"}, "log.cleaner.io.max.bytes.per.second",
            "Value must be at least 1")
    refused({"log.cleaner.io.buffer.load.factor": "1.5"}, "Value must be no more than 1")
    refused({"log.cleaner.io.max.bytes.per.second": "fast"}, "Not a number of type DOUBLE")
