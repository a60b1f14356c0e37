"""The group coordinator's shards: the __consumer_offsets partitions this broker leads.

Leading a partition makes this broker the coordinator of the groups hashed to it
(docs/cluster.md). on_elected replays the partition (loader.py) in the background and installs
its groups inside the actor; until then the partition's groups answer
COORDINATOR_LOAD_IN_PROGRESS. on_resigned drops them at once, answering parked joins and syncs
with NOT_COORDINATOR, so their members find the new coordinator (which replays the same
records: committed offsets and the group survive the move). A single node elects every shard
itself at start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError
from storage.api import ClusterView, TopicPartition

from ..shards import CoordinatorShards
from ..tasks import TaskSupervisor
from . import commands as c
from .admin import AdminOperations
from .config import GroupConfig
from .loader import PartitionLoader
from .log import CONSUMER_OFFSETS_TOPIC, partition_for
from .metadata import GroupMetadata

__all__ = ("ShardedGroups", "fail_waiters")

log = logging.getLogger(__name__)


def fail_waiters(group: GroupMetadata, error: KafkaError) -> None:
    """Answer every parked JoinGroup / SyncGroup of the group with error."""
    for member in group.members.values():
        for waiter in (member.join_waiter, member.sync_waiter):
            if isinstance(waiter, asyncio.Future) and not waiter.done():
                waiter.set_exception(error)


class ShardedGroups(AdminOperations):
    """GroupCoordinator's shard bookkeeping; the actor supplies _install_in_actor and _schedule."""

    shards: CoordinatorShards
    cluster: ClusterView | None
    _loads: TaskSupervisor

    def _init_shards(self) -> None:
        self.shards = CoordinatorShards(CONSUMER_OFFSETS_TOPIC, "group", self.cluster)
        self._loads = TaskSupervisor("group coordinator")

    async def _install_in_actor(self, partition: int, epoch: int, loaded: dict[str, GroupMetadata],
                                records: int, seconds: float) -> None:
        """Run _install inside the actor, between commands."""
        raise NotImplementedError

    def _schedule(self, group_id: str) -> None:
        raise NotImplementedError

    def resume_consumer_groups(self, now: int, groups: Iterable[GroupMetadata] | None = None) -> None:
        raise NotImplementedError

    def _partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def shard_error(self, cmd: c.Command) -> KafkaError | None:
        """The error for a command about groups whose shard is not loaded here (None: serve it)."""
        for group_id in c.groups_of(cmd):
            try:
                self.shards.check(self._partition_of(group_id), group_id)
            except KafkaError as exc:
                return exc
        return None

    async def elect_all(self, epoch: int) -> None:
        """A single node: lead every shard and load each before serving."""
        for partition in range(self.num_partitions):
            if self.shards.elect(partition, epoch):
                await self._load(partition, epoch)

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        if tp.topic == CONSUMER_OFFSETS_TOPIC and self.shards.elect(tp.partition, leader_epoch):
            self.shards.track_load(tp.partition, self._loads.spawn(
                f"loading {tp}", lambda: self._load(tp.partition, leader_epoch)))

    async def on_resigned(self, tp: TopicPartition) -> None:
        if tp.topic != CONSUMER_OFFSETS_TOPIC or not self.shards.resign(tp.partition):
            return
        error = KafkaError(ErrorCode.not_coordinator, f"this broker no longer leads {tp}")
        gone = [g for g in self.groups if self._partition_of(g) == tp.partition]
        for group_id in gone:
            fail_waiters(self.groups.pop(group_id), error)
        log.info("no longer the coordinator of %s: unloaded %d groups", tp, len(gone))

    async def _load(self, partition: int, epoch: int) -> None:
        if not self.shards.is_current(partition, epoch):
            return
        tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, partition)
        loaded: dict[str, GroupMetadata] = {}
        started = time.monotonic()
        records = await PartitionLoader(loaded, self.config, self._clock_ms()).load(self._logs.get_log(tp))
        seconds = time.monotonic() - started
        await self._install_in_actor(partition, epoch, loaded, records, seconds)

    def _install(self, partition: int, epoch: int, loaded: dict[str, GroupMetadata],
                       records: int, seconds: float) -> None:
        if not self.shards.finish_loading(partition, epoch):
            return
        for group_id in [g for g in self.groups if self._partition_of(g) == partition]:
            del self.groups[group_id]  # stale: left from an earlier term of this shard
        kept = {g: group for g, group in loaded.items() if not self._removable(group)}
        self.groups.update(kept)
        self.resume_consumer_groups(self._clock_ms(), kept.values())
        for group_id in kept:
            self._schedule(group_id)
        # A single node loads every shard at start: one line per shard only when it holds something.
        level = logging.INFO if records or (self.cluster is not None and not self.cluster.leads_everything) \
            else logging.DEBUG
        log.log(level, "loaded %d groups from %d records of %s-%d in %.3f s (coordinator epoch %d)", len(kept),
                records, CONSUMER_OFFSETS_TOPIC, partition, seconds, epoch)

    async def ensure_topic(self, config: GroupConfig) -> int:
        """Create __consumer_offsets unless it exists (a broker of the cluster may just have)."""
        # Kafka's groupMetadataTopicConfigs.
        configs = {"cleanup.policy": "compact", "compression.type": "producer",
                   "segment.bytes": str(config.offsets_topic_segment_bytes)}
        meta = self._logs.topics.get(CONSUMER_OFFSETS_TOPIC)
        if meta is None:
            try:
                meta = await self._logs.create_topic(
                    CONSUMER_OFFSETS_TOPIC, config.offsets_topic_num_partitions, configs)
            except KafkaError as exc:
                if exc.code is not ErrorCode.topic_already_exists:
                    raise
                meta = self._logs.topics[CONSUMER_OFFSETS_TOPIC]
        elif "segment.bytes" not in meta.configs:
            # Made before segments were sized for compaction: adopt offsets.topic.segment.bytes
            # once, as Kafka would have at creation (an operator's own setting is kept).
            await self._logs.alter_configs(CONSUMER_OFFSETS_TOPIC, {**configs, **meta.configs})
        return meta.partitions
