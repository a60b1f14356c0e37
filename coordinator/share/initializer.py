"""InitializeShareGroupState from the group coordinator (KIP-932; Kafka's GroupCoordinatorService
persisterInitialize): a share-partition is assigned to the members of a group only once its share
coordinator holds a state for it, so its leader never starts one of its own.

A heartbeat that finds subscribed share-partitions not initialized records them initializing
(ShareGroup.start_initializing) and, once answered, has them initialized here: at the share
coordinator of each key in cluster mode (ClusterShareAdmin), else in this broker's
__share_group_state. Each gets the group epoch as its state epoch and no start offset (-1): its
leader starts where share.auto.offset.reset says when it first reads it. The group then records
the topic's partitions initialized, or, if a share coordinator failed, not initializing, so that
the next heartbeat tries again (Kafka's uninitializeShareGroupState).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Final

from protocol.errors import KafkaError
from storage.api import LogSource, TopicPartition

from .admin import ClusterShareAdmin
from .group import ShareGroup
from .partitions import SharePartitionManager
from .state_log import UNINITIALIZED_START_OFFSET, SharePartitionKey

__all__ = ("ShareInitializer",)

log = logging.getLogger(__name__)

# topic id -> the partitions to initialize and their start offset (-1: share.auto.offset.reset's)
Todo = dict[uuid.UUID, tuple[range, int]]
# Kafka's group.share.initialize.retry.interval.ms (internal, at its default): how long a
# share-partition stays initializing before a heartbeat initializes it again
RETRY_MS: Final = 30_000


class ShareInitializer:
    def __init__(self, logs: LogSource, manager: SharePartitionManager, admin: ClusterShareAdmin | None,
                 groups: Mapping[str, ShareGroup], persist: Callable[[str], Awaitable[None]]) -> None:
        self._logs = logs
        self._manager = manager
        self._admin = admin
        self._groups = groups
        self._persist = persist
        self._locks: dict[str, asyncio.Lock] = {}

    @staticmethod
    def due(group: ShareGroup, now_ms: int) -> Todo:
        """The share-partitions a heartbeat has just found to initialize (recorded initializing)."""
        return group.start_initializing(now_ms, RETRY_MS)

    async def run(self, group_id: str, state_epoch: int, todo: Todo) -> None:
        """Initialize the partitions, then record and persist the outcome in the group (unless it
        is gone meanwhile)."""
        errors: dict[SharePartitionKey, KafkaError | None] = {}
        for start in {start for _, start in todo.values()}:
            errors |= await self._initialize([SharePartitionKey(group_id, topic_id, p) for topic_id, (partitions, at)
                                              in todo.items() if at == start for p in partitions], state_epoch, start)
        group = self._groups.get(group_id)
        if group is None:
            return
        for topic_id, (partitions, _) in todo.items():
            failed = next((e for k, e in errors.items() if k.topic_id == topic_id and e is not None), None)
            if failed is None:
                group.initialized_now(topic_id, partitions)
            else:
                log.warning("share group %s: share-partitions of topic %s not initialized: %s", group_id, topic_id,
                            failed)
                group.initialize_failed(topic_id, partitions)
        await self._persist(group_id)

    async def altered(self, group: ShareGroup, altered: Mapping[SharePartitionKey, TopicPartition]) -> None:
        """AlterShareGroupOffsets initialized these share-partitions at their offsets. The group
        records initialized partitions as a count per topic, so the other partitions of their
        topics not yet initialized are initialized now too, with no start offset (as the next
        heartbeat would initialize them in Kafka); then the topics are recorded initialized."""
        counts = {key.topic_id: meta.partitions for key, tp in altered.items()
                  if (meta := self._logs.topics.get(tp.topic)) is not None}
        rest = [SharePartitionKey(group.group_id, topic_id, p) for topic_id, count in counts.items()
                for p in range(group.initialized.get(topic_id, 0), count)
                if SharePartitionKey(group.group_id, topic_id, p) not in altered]
        errors = await self._initialize(rest, group.group_epoch, UNINITIALIZED_START_OFFSET)
        for topic_id, count in counts.items():
            if all(errors.get(k) is None for k in rest if k.topic_id == topic_id):
                group.initialized_now(topic_id, range(count))
        await self._persist(group.group_id)

    async def initialize_missing(self, group_ids: Iterable[str]) -> None:
        """Share-partitions the groups record initialized that their share coordinator holds no
        state for are initialized now with no start offset, where their leader used to start
        them: eosbroker before this initialization wrote no state until a share-partition's
        first acknowledgement or release (Kafka's never lack one)."""
        topics = {meta.topic_id: meta.partitions for meta in self._logs.topics.values()}
        for group_id in list(group_ids):
            group = self._groups.get(group_id)
            if group is None:
                continue
            keys = [SharePartitionKey(group_id, t, p) for t, count in group.initialized.items() if t in topics
                    for p in range(min(count, topics[t]))]
            async with self.lock(group_id):
                missing = await self._missing(group_id, keys)
                if missing:
                    log.info("share group %s: initializing %d share-partitions recorded initialized without a state",
                             group_id, len(missing))
                    await self._initialize(missing, group.group_epoch, UNINITIALIZED_START_OFFSET)

    def lock(self, group_id: str) -> asyncio.Lock:
        """Held while a group's share-partition states are read and then initialized (here, and by
        AlterShareGroupOffsets), so that neither writes a state epoch the other has not read."""
        return self._locks.setdefault(group_id, asyncio.Lock())

    async def _missing(self, group_id: str, keys: list[SharePartitionKey]) -> list[SharePartitionKey]:
        if not keys:
            return []
        if self._admin is None:
            return [key for key in keys if self._manager.stored_state(key) is None]
        return [key for key, got in (await self._admin.states(group_id, keys)).items() if got is None]

    async def _initialize(self, keys: list[SharePartitionKey], state_epoch: int, start_offset: int,
                          ) -> dict[SharePartitionKey, KafkaError | None]:
        if not keys:
            return {}
        if self._admin is not None:
            return await self._admin.initialize(keys, state_epoch, start_offset)
        try:
            await self._manager.initialize(keys, state_epoch, start_offset)
        except KafkaError as exc:
            return dict.fromkeys(keys, exc)
        return dict.fromkeys(keys)
