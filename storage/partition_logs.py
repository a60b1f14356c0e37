"""What every backend's LogSource (storage/api.py) shares: the partition logs this broker serves,
by partition, and the topic configs they run with (the broker's defaults under each topic's own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

from .api import OpenTransaction, TopicMetadata, TopicPartition
from .log_config import LogConfig, effective_topic_defaults
from .sequenced_log import SequencedLog

__all__ = ("PartitionLogs",)

L = TypeVar("L", bound=SequencedLog)


class PartitionLogs(Generic[L]):
    logs: dict[TopicPartition, L]
    log_defaults: Mapping[str, object]

    def topic_defaults(self) -> dict[str, str]:
        """The value every topic config has where the topic sets none."""
        return effective_topic_defaults(self.log_defaults)

    def log_config(self, meta: TopicMetadata) -> LogConfig:
        return LogConfig.from_values(self.log_defaults, meta.configs)

    def find_log(self, tp: TopicPartition) -> L | None:
        return self.logs.get(tp)

    def open_transactions(self) -> dict[TopicPartition, list[OpenTransaction]]:
        return {tp: txns for tp, plog in self.logs.items() if (txns := plog.open_transactions())}

    def _retained(self) -> list[L]:
        """The logs retention.ms / retention.bytes apply to (cleanup.policy has delete)."""
        return [plog for plog in list(self.logs.values()) if "delete" in plog.config.cleanup_policy.split(",")]
