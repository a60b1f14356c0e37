"""Broker configuration from Kafka's own property names, mapped once into BrokerConfig fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ("BrokerConfig", "ConfigError", "PROPERTY_FIELDS", "load_properties", "build_config")


class ConfigError(ValueError):
    """A property that is unknown or whose value does not parse."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    node_id: int = 1
    log_dirs: str = "./data"
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    log_segment_bytes: int = 1 << 30
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    log_roll_ms: int = 7 * 24 * 3600 * 1000
    log_flush_interval_messages: int = (1 << 63) - 1
    log_flush_interval_ms: int | None = None
    log_index_interval_bytes: int = 4096
    log_message_timestamp_type: str = "CreateTime"
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    queued_max_requests: int = 500
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = (1 << 31) - 1
    transaction_state_log_num_partitions: int = 50
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3600000
    producer_id_expiration_ms: int = 86400000
    producer_id_expiration_check_interval_ms: int = 600000
    cluster_id: str = "eosbroker-cluster-0001"
    advertised_listeners: str | None = None
    listeners: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return Path(self.log_dirs.split(",")[0])

    @property
    def advertised(self) -> tuple[str, int]:
        """What Metadata and FindCoordinator return for this node."""
        host, port = self.advertised_host, self.advertised_port
        if self.advertised_listeners and (host is None or port is None):
            h, p = _parse_listener(self.advertised_listeners)
            host, port = host or h, port or p
        return host or self.host, port if port is not None else self.port

    def with_port(self, port: int) -> BrokerConfig:
        return dataclasses.replace(self, port=port)


def _parse_listener(value: str) -> tuple[str, int]:
    first = value.split(",")[0].strip()
    _, _, hostport = first.rpartition("://")
    host, _, port = hostport.rpartition(":")
    if not port.isdigit():
        raise ConfigError(f"cannot parse listener {value!r}; expected NAME://host:port")
    return host.strip("[]") or "127.0.0.1", int(port)


# Kafka property name -> BrokerConfig field, for every field settable from properties.
PROPERTY_FIELDS: Mapping[str, str] = {
    f.name.replace("_", "."): f.name
    for f in dataclasses.fields(BrokerConfig)
    if f.name not in {"host", "port", "advertised_host", "advertised_port", "extra"}
}
# Accepted for compatibility with server.properties files; they have no effect on a single node.
IGNORED_PROPERTIES = frozenset({
    "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names", "inter.broker.listener.name", "listener.security.protocol.map",
    "num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes", "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "min.insync.replicas", "num.recovery.threads.per.data.dir", "broker.id",
})
_ALIASES = {"log.dir": "log.dirs", "broker.id": "node.id"}


def load_properties(path: Path) -> dict[str, str]:
    """Parse a Java-style .properties file (key=value or key: value, # and ! comments)."""
    props: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"{path}: cannot parse line {raw!r}")
        props[line[:sep].strip()] = line[sep + 1 :].strip()
    return props


def _convert(name: str, value: str, target: Any) -> Any:
    kind = BrokerConfig.__dataclass_fields__[name].type
    try:
        if "bool" in str(kind):
            if value.lower() not in {"true", "false"}:
                raise ValueError(value)
            return value.lower() == "true"
        if "int" in str(kind):
            return int(value)
    except ValueError:
        raise ConfigError(f"{target}={value!r} is not a valid {kind}") from None
    return value


def build_config(props: Mapping[str, str], **overrides: Any) -> tuple[BrokerConfig, list[str]]:
    """BrokerConfig from properties; returns it with the keys that were unknown (to report)."""
    values: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in props.items():
        key = _ALIASES.get(key, key)
        if key in IGNORED_PROPERTIES:
            continue
        name = PROPERTY_FIELDS.get(key)
        if name is None:
            unknown.append(key)
            continue
        values[name] = _convert(name, value, key)
    values.update({k: v for k, v in overrides.items() if v is not None})
    if values.get("listeners") and "port" not in overrides:
        host, port = _parse_listener(values["listeners"])
        values.setdefault("host", host)
        values.setdefault("port", port)
    return BrokerConfig(**values), unknown


def parse_sets(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out
