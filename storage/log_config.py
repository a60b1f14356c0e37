"""Per-topic log settings: topic-level overrides (Kafka's topic config names) over broker defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ("LogConfig", "TOPIC_CONFIG_DEFAULTS_FROM_BROKER")

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
            values[name] = int(raw) if "int" in kind else str(raw)
        return cls(**values)  # type: ignore[arg-type]
