"""Per-topic log settings: topic-level overrides (Kafka's topic config names) over broker defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import cast

from protocol.errors import ErrorCode, KafkaError

__all__ = (
    "AlterConfigOp",
    "KAFKA_TOPIC_DEFAULTS",
    "LogConfig",
    "TOPIC_CONFIG_DEFAULTS_FROM_BROKER",
    "TOPIC_CONFIG_TYPES",
    "check_topic_configs",
    "effective_topic_defaults",
    "incremental_alter",
    "validate_topic_configs",
)

# topic config name -> broker property that supplies its default
TOPIC_CONFIG_DEFAULTS_FROM_BROKER: Mapping[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "min.insync.replicas": "min.insync.replicas",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    flush_messages: int = (1 << 63) - 1
    flush_ms: int | None = None
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    cleanup_policy: str = "delete"
    # The cleaner's (storage/cleaner/): Kafka's defaults.
    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = (1 << 63) - 1

    @classmethod
    def from_values(cls, defaults: Mapping[str, object], overrides: Mapping[str, str]) -> LogConfig:
        """defaults: broker-level values by topic config name; overrides: the topic's own configs."""
        values: dict[str, object] = {}
        for name in cls.__dataclass_fields__:
            key = name.replace("_", ".")
            raw = overrides.get(key, defaults.get(key))
            if raw is None:
                continue
            kind = str(cls.__dataclass_fields__[name].type)
            if kind == "float":
                values[name] = float(cast("float | str", raw))
            else:
                values[name] = int(cast("int | str", raw)) if "int" in kind else str(raw)
        return cls(**values)  # type: ignore[arg-type]


# Every topic config name Kafka 4's LogConfig defines (TopicConfig plus the throttled-replica
# lists), with its type as DescribeConfigs reports it. Names outside this table are refused, as
# Kafka refuses them ("Unknown topic config name"): among them the ones Kafka 4.0 removed,
# message.format.version, message.downconversion.enable and message.timestamp.difference.max.ms
# (KIP-724, KIP-937). The ones LogConfig does not act on are still stored and described, so tools
# that set them work.
TOPIC_CONFIG_TYPES: Mapping[str, str] = {
    "cleanup.policy": "list", "compression.type": "string", "compression.gzip.level": "int",
    "errors.deadletterqueue.group.enable": "boolean",
    "compression.lz4.level": "int", "compression.zstd.level": "int", "delete.retention.ms": "long",
    "file.delete.delay.ms": "long", "flush.messages": "long", "flush.ms": "long",
    "follower.replication.throttled.replicas": "list", "index.interval.bytes": "int",
    "leader.replication.throttled.replicas": "list", "local.retention.bytes": "long",
    "local.retention.ms": "long", "max.compaction.lag.ms": "long", "max.message.bytes": "int",
    "message.timestamp.after.max.ms": "long", "message.timestamp.before.max.ms": "long",
    "message.timestamp.type": "string",
    "min.cleanable.dirty.ratio": "double", "min.compaction.lag.ms": "long", "min.insync.replicas": "int",
    "preallocate": "boolean", "remote.log.copy.disable": "boolean", "remote.log.delete.on.disable": "boolean",
    "remote.storage.enable": "boolean", "retention.bytes": "long", "retention.ms": "long",
    "segment.bytes": "int", "segment.index.bytes": "int", "segment.jitter.ms": "long", "segment.ms": "long",
    "unclean.leader.election.enable": "boolean",
}
# Kafka's defaults for the topic configs (4.x), used where no broker property supplies one.
KAFKA_TOPIC_DEFAULTS: Mapping[str, str] = {
    "cleanup.policy": "delete", "compression.type": "producer", "compression.gzip.level": "-1",
    "compression.lz4.level": "9", "compression.zstd.level": "3", "delete.retention.ms": "86400000",
    "errors.deadletterqueue.group.enable": "false",
    "file.delete.delay.ms": "60000", "flush.messages": str((1 << 63) - 1), "flush.ms": str((1 << 63) - 1),
    "follower.replication.throttled.replicas": "", "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "", "local.retention.bytes": "-2", "local.retention.ms": "-2",
    "max.compaction.lag.ms": str((1 << 63) - 1), "max.message.bytes": "1048588",
    "message.timestamp.after.max.ms": "3600000", "message.timestamp.before.max.ms": str((1 << 63) - 1),
    "message.timestamp.type": "CreateTime", "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1", "preallocate": "false", "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false", "remote.storage.enable": "false", "retention.bytes": "-1",
    "retention.ms": "604800000", "segment.bytes": "1073741824", "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0", "segment.ms": "604800000", "unclean.leader.election.enable": "false",
}
_CHOICES: Mapping[str, frozenset[str]] = {
    "cleanup.policy": frozenset({"compact", "delete"}),
    "compression.type": frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}),
    "message.timestamp.type": frozenset({"CreateTime", "LogAppendTime"}),
}


# Kafka's LogConfig validators of the cleaner's configs (between / atLeast).
_RANGES: Mapping[str, tuple[float, float]] = {
    "min.cleanable.dirty.ratio": (0.0, 1.0),
    "delete.retention.ms": (0, 2**63 - 1),
    "min.compaction.lag.ms": (0, 2**63 - 1),
    "max.compaction.lag.ms": (1, 2**63 - 1),
}


class AlterConfigOp(IntEnum):
    """IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_config, message)


def _check_value(name: str, value: str) -> None:
    kind = TOPIC_CONFIG_TYPES[name]
    try:
        if kind in ("int", "long"):
            int(value)
        elif kind == "double":
            float(value)
    except ValueError:
        raise _invalid(f"invalid value {value!r} for topic config {name}: expected {kind}") from None
    if kind == "boolean" and value.lower() not in ("true", "false"):
        raise _invalid(f"invalid value {value!r} for topic config {name}: expected true or false")
    bounds = _RANGES.get(name)
    if bounds is not None and not bounds[0] <= float(value) <= bounds[1]:
        raise _invalid(f"invalid value {value} for topic config {name}: must be in [{bounds[0]}, {bounds[1]}]")
    choices = _CHOICES.get(name)
    items = _split(value) if kind == "list" else [value]
    if choices is not None and not set(items) <= choices:
        raise _invalid(f"invalid value {value!r} for topic config {name}: allowed are {sorted(choices)}")


def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
    """Kafka's LogConfig.validate for the names and values a client sends."""
    for name, value in configs.items():
        if name not in TOPIC_CONFIG_TYPES:
            raise _invalid(f"unknown topic config name: {name}")
        if value is None:
            raise KafkaError(ErrorCode.invalid_request, f"null value not supported for topic config {name}")
        _check_value(name, value)


def check_topic_configs(log_defaults: Mapping[str, object], configs: Mapping[str, str]) -> None:
    """A topic's own configs, validated by name and value and as a whole LogConfig."""
    validate_topic_configs(configs)
    try:
        LogConfig.from_values(log_defaults, configs)
    except (TypeError, ValueError) as exc:
        raise KafkaError(ErrorCode.invalid_config, f"invalid topic config: {exc}") from exc


def effective_topic_defaults(log_defaults: Mapping[str, object]) -> dict[str, str]:
    """The value every topic config has where the topic sets none: the broker's property
    (log.retention.ms, ...) if it has one, else Kafka's default."""
    out = dict(KAFKA_TOPIC_DEFAULTS)
    for name, value in log_defaults.items():
        if value is not None:
            out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def incremental_alter(
    current: Mapping[str, str], changes: Iterable[tuple[str, int, str | None]], defaults: Mapping[str, object]
) -> dict[str, str]:
    """The topic's own configs after IncrementalAlterConfigs operations (name, op, value).
    APPEND and SUBTRACT work on list configs only, starting from the effective value."""
    out = dict(current)
    for name, op, value in changes:
        if name not in TOPIC_CONFIG_TYPES:
            raise _invalid(f"unknown topic config name: {name}")
        try:
            op = AlterConfigOp(op)
        except ValueError:
            raise KafkaError(ErrorCode.invalid_request, f"unknown config operation {op} for {name}") from None
        if op is AlterConfigOp.DELETE:
            out.pop(name, None)
            continue
        if value is None:
            raise KafkaError(ErrorCode.invalid_request, f"null value not supported for {op.name} of {name}")
        if op is AlterConfigOp.SET:
            out[name] = value
            continue
        if TOPIC_CONFIG_TYPES[name] != "list":
            raise _invalid(f"config value {op.name.lower()} is not allowed for config key {name}")
        old = out.get(name, defaults.get(name))
        items = _split(str(old)) if old is not None else []
        if op is AlterConfigOp.APPEND:
            items += [v for v in _split(value) if v not in items]
        else:
            items = [v for v in items if v not in _split(value)]
        out[name] = ",".join(items)
    return out
