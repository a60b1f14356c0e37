"""What every backend's LogSource (storage/api.py) shares: the partition logs this broker serves,
by partition, and the topic configs they run with (the broker's defaults under each topic's own);
and what those share where the brokers share the topics and each leads some partitions (cluster
mode, a local set of processes)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from protocol.errors import ErrorCode, KafkaError

from .api import OpenTransaction, TopicIdCache, TopicMetadata, TopicPartition
from .log_config import LogConfig, effective_topic_defaults
from .sequenced_log import SequencedLog

__all__ = ("LedPartitionLogs", "PartitionLogs", "check_more_partitions", "existing_topic", "new_topic")

L = TypeVar("L", bound=SequencedLog)


class PartitionLogs(Generic[L]):
    def __init__(self, log_defaults: Mapping[str, object], producer_id_expiration_ms: int) -> None:
        self.log_defaults = log_defaults
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.logs: dict[TopicPartition, L] = {}
        self._by_id = TopicIdCache()
        self._changing = asyncio.Lock()  # this broker's topic changes, one at a time

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


class LedPartitionLogs(PartitionLogs[L]):
    """Topics every broker shares, of which this broker serves the partitions it leads."""

    def __init__(self, log_defaults: Mapping[str, object], producer_id_expiration_ms: int) -> None:
        super().__init__(log_defaults, producer_id_expiration_ms)
        self._topics: dict[str, TopicMetadata] = {}
        self._fenced_listeners: list[Callable[[TopicPartition], None]] = []

    @property
    def topics(self) -> Mapping[str, TopicMetadata]:
        return self._topics

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.lookup(self._topics, topic_id)

    def get_log(self, tp: TopicPartition) -> L:
        """The log of tp if led here; NOT_LEADER_OR_FOLLOWER if another broker leads it."""
        plog = self.logs.get(tp)
        if plog is not None:
            return plog
        meta = self._topics.get(tp.topic)
        if meta is not None and 0 <= tp.partition < meta.partitions:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"this broker does not lead {tp}")
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist")

    def _existing(self, name: str) -> TopicMetadata:
        return existing_topic(self._topics, name)

    async def set_log_defaults(self, log_defaults: Mapping[str, object]) -> None:
        async with self._changing:
            self.log_defaults = dict(log_defaults)
        for tp, plog in list(self.logs.items()):
            meta = self._topics.get(tp.topic)
            if meta is not None:
                await self._update_config(tp, plog, meta)

    async def _update_config(self, tp: TopicPartition, plog: L, meta: TopicMetadata) -> None:
        try:
            await plog.update_config(self.log_config(meta))
        except KafkaError:
            if self.logs.get(tp) is plog:
                raise
            # resigned meanwhile: the next leader opens it with the configs of then


def existing_topic(topics: Mapping[str, TopicMetadata], name: str) -> TopicMetadata:
    meta = topics.get(name)
    if meta is None:
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
    return meta


def new_topic(topics: Mapping[str, TopicMetadata], name: str, partitions: int,
              configs: Mapping[str, str]) -> TopicMetadata:
    """The topic CreateTopics makes (checked by storage/topic_checks.py), under the caller's lock:
    refused when the name is taken."""
    if name in topics:
        raise KafkaError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
    return TopicMetadata(name=name, topic_id=uuid.uuid4(), partitions=partitions, configs=configs)


def check_more_partitions(meta: TopicMetadata, count: int) -> TopicMetadata:
    """CreatePartitions' count must be above the topic's; returns the topic."""
    if count <= meta.partitions:
        raise KafkaError(ErrorCode.invalid_partitions,
                         f"topic {meta.name!r} has {meta.partitions} partitions; the new count {count} must be larger")
    return meta
