"""GroupCoordinator: the actor that owns every classic group and its committed offsets.

The actor is coordinator/runtime.py's, as the transaction coordinator's: the public methods only
queue a typed command (commands.py) and await its reply, so group state is touched by one task
and needs no locks. actor.py says what each command does; the decisions are pure (offset_shard.py,
classic_shard.py, consumer_shard.py) and the runtime applies them, Kafka's way:

- decide (validate, compute the records and the answer), persist (the runtime appends the
  records: operations.write_records), then replay them (replay.py) and reply.
  A commit is acknowledged only once its records are in the log; a SyncGroup or a group emptying
  out is answered only once the group record is.
- OffsetCommits queued one behind the other are decided one by one, then written with one
  append per __consumer_offsets partition (the runtime hands them over together): a consumer
  group's members committing together cost the log one batch, not one each.
- at start-up every partition of __consumer_offsets is replayed (loader.py) before the broker
  listens, so a restarted broker answers OffsetFetch with what it acknowledged before. In cluster
  mode each partition is a shard loaded when this broker is elected its leader (sharding.py).
- session, rebalance and sync timeouts are the runtime's timer, one deadline per group, set
  after each command; the offset-retention check is another.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError
from storage.api import ClusterView, LogSource, TopicPartition

from ..runtime import ApiError, CoordinatorRuntime, wall_clock_ms
from ..transaction.metadata import ProducerIdAndEpoch
from . import commands as c
from .actor import RETENTION, GroupActor, is_offset_commit
from .config import GroupConfig
from .consumer_group import ConsumerGroupState
from .consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest, HeartbeatResult
from .consumer_persist import ConsumerGroupDescription
from .log import CONSUMER_OFFSETS_TOPIC, partition_for
from .member import JoinGroupResult, JoinParams, SyncGroupResult, SyncParams
from .metadata import GroupMetadata
from .offsets import OffsetAndMetadata
from .sharding import fail_waiters
from .snapshot import GroupSummary
from .state import GroupState

__all__ = ("GroupCoordinator",)

log = logging.getLogger(__name__)
R = TypeVar("R")


class GroupCoordinator(GroupActor):
    """Public face: one coroutine per group API; see commands.py for what each carries."""

    def __init__(
        self,
        logs: LogSource,
        config: GroupConfig | None = None,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
        consumer_config: ConsumerGroupConfig | None = None,
        cluster: ClusterView | None = None,
    ) -> None:
        super().__init__(logs, config or GroupConfig(), clock_ms)
        self.consumer_config = consumer_config or ConsumerGroupConfig()
        self.cluster = cluster
        self._init_shards()
        self.runtime = CoordinatorRuntime(
            "group coordinator", self._run_message, write=self.write_records, run_effect=self.run_effect,
            execute_batch=self._serve_commits, batchable=is_offset_commit, on_stopped=self._on_stopped,
            clock_ms=clock_ms)

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create __consumer_offsets if needed and start serving; a broker that leads everything
        (or has no ClusterView) replays every partition first, a cluster member loads the shards
        it is elected to."""
        self.num_partitions = await self.ensure_topic(self.config)
        self.runtime.timer.schedule(RETENTION, self._clock_ms() + self.config.offsets_retention_check_interval_ms,
                                    c.RetentionCheck())
        self.runtime.start()
        if self.cluster is None or self.cluster.leads_everything:
            await self.elect_all(0)
        else:
            self.cluster.add_listener(self)

    async def _install_in_actor(self, partition: int, epoch: int, loaded: dict[str, GroupMetadata],
                                records: int, seconds: float) -> None:
        def install(reply: c.Reply[None]) -> c.Command:
            return c.InstallShard(partition=partition, epoch=epoch, groups=loaded, records=records, seconds=seconds,
                                  reply=reply)

        await self._call(install)

    async def stop(self) -> None:
        await self._loads.stop()
        await self.runtime.stop()

    def _on_stopped(self, left: list[c.GroupMessage]) -> None:
        # Supervision: nobody may wait forever on a dead actor, parked joins and syncs included.
        error = KafkaError(ErrorCode.coordinator_not_available, "group coordinator stopped")
        for message in left:
            if not isinstance(message, c.GroupDeadline | c.RetentionCheck) and not message.reply.done():
                message.reply.set_exception(error)
        for group in self.groups.values():
            fail_waiters(group, error)

    # -- public face -------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> TopicPartition:
        """The __consumer_offsets partition holding the group (where txn markers must go)."""
        return TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(group_id, self.num_partitions))

    async def _call(self, make: Callable[[c.Reply[R]], c.Command]) -> R:
        if not self.runtime.running:
            raise KafkaError(
                ErrorCode.coordinator_not_available, "group coordinator is not running"
            )
        reply: c.Reply[R] = asyncio.get_running_loop().create_future()
        self.runtime.submit(make(reply))
        result = await reply
        if isinstance(result, ApiError):  # a refusal answered as a value: the caller's KafkaError
            raise result.exception()
        return result

    async def join_group(self, group_id: str, params: JoinParams) -> JoinGroupResult:
        return await self._call(lambda r: c.JoinGroup(group_id=group_id, params=params, reply=r))

    async def sync_group(self, group_id: str, params: SyncParams) -> SyncGroupResult:
        return await self._call(lambda r: c.SyncGroup(group_id=group_id, params=params, reply=r))

    async def heartbeat(
        self,
        group_id: str,
        *,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None = None,
    ) -> ErrorCode:
        return await self._call(
            lambda r: c.Heartbeat(
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                reply=r,
            )
        )

    async def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        return await self._call(
            lambda r: c.LeaveGroup(group_id=group_id, members=tuple(members), reply=r)
        )

    async def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        member_id: str = "",
        generation_id: int = -1,
        group_instance_id: str | None = None,
        retention_ms: int | None = None,
        producer: ProducerIdAndEpoch | None = None,
        api_version: int = 9,
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit; with a producer, TxnOffsetCommit: the offsets are written as a
        transactional batch of the producer and held pending until complete_txn (KIP-447: a
        known member id or generation is checked)."""
        return await self._call(
            lambda r: c.CommitOffsets(
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                offsets=dict(offsets),
                retention_ms=retention_ms,
                producer=producer,
                api_version=api_version,
                reply=r,
            )
        )

    async def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        require_stable: bool = False,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> list[c.FetchedOffset]:
        """Raises KafkaError (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) for a consumer-protocol
        member that is not (or no longer) at this epoch."""
        return await self._call(
            lambda r: c.FetchOffsets(
                group_id=group_id,
                partitions=None if partitions is None else tuple(partitions),
                require_stable=require_stable,
                member_id=member_id,
                member_epoch=member_epoch,
                reply=r,
            )
        )

    async def consumer_group_heartbeat(self, group_id: str, request: HeartbeatRequest) -> HeartbeatResult:
        """ConsumerGroupHeartbeat (KIP-848); raises KafkaError with the error to answer."""
        return await self._call(
            lambda r: c.ConsumerGroupHeartbeat(group_id=group_id, request=request, reply=r))

    async def consumer_group_describe(self, group_ids: Sequence[str]) -> list[ConsumerGroupDescription]:
        return await self._call(lambda r: c.ConsumerGroupDescribe(group_ids=tuple(group_ids), reply=r))

    async def describe_groups(self, group_ids: Sequence[str]) -> list[GroupSummary]:
        return await self._call(lambda r: c.DescribeGroups(group_ids=tuple(group_ids), reply=r))

    async def list_groups(
        self, states: Collection[str] = ()
    ) -> list[tuple[str, str, GroupState | ConsumerGroupState]]:
        """(group id, protocol type, state) of every live group, optionally filtered by state name."""
        return await self._call(lambda r: c.ListGroups(states=frozenset(states), reply=r))

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, ErrorCode]:
        return await self._call(lambda r: c.DeleteGroups(group_ids=tuple(group_ids), reply=r))

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        return await self._call(
            lambda r: c.DeleteOffsets(group_id=group_id, partitions=tuple(partitions), reply=r)
        )

    async def topics_deleted(self, topics: Collection[str]) -> int:
        """Drop every group's offsets of deleted topics, as Kafka's handleDeletedPartitions does,
        so a topic created again under the name starts without stale offsets; return how many."""
        return await self._call(lambda r: c.TopicsDeleted(topics=frozenset(topics), reply=r))

    async def complete_txn(
        self, producer_id: int, group_ids: Collection[str] | None, commit: bool
    ) -> None:
        """Apply (commit) or drop (abort) the producer's pending offsets in these groups (all
        groups if None). Call it after the marker is in the group's __consumer_offsets partition:
        the marker is what replay uses to reach the same result after a restart."""
        return await self._call(
            lambda r: c.CompleteTxn(
                producer_id=producer_id,
                group_ids=None if group_ids is None else frozenset(group_ids),
                commit=commit,
                reply=r,
            )
        )
