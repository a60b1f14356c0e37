"""What the GroupCoordinator actor does with each command, inside its owner task.

Every method here runs in the actor, one at a time; the only awaits are appends to
__consumer_offsets, so no other command sees a half-applied change. A decision's records are
written and then replayed (replay.py) by the runtime's apply (coordinator/runtime.py), whose write
is write_records here. Errors that belong in a response are returned (or set as results), never
raised out of the actor.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar, assert_never

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError
from protocol.records import build_batch
from storage.api import AppendOrigin, LogSource, TopicPartition

from ..runtime import ApiError, CoordinatorResult, CoordinatorRuntime
from ..transaction.metadata import ProducerIdAndEpoch
from . import classic_shard as classic
from . import commands as c
from .classic_shard import ClassicEffect, ClassicResult, Install, Reply
from .config import GroupConfig
from .consumer_shard import Timers
from .group_offsets import validate_offset_fetch
from .log import CONSUMER_OFFSETS_TOPIC, partition_for
from .member import JoinGroupResult, SyncGroupResult
from .metadata import GroupMetadata
from .offset_shard import CommitResult, KeepAlive, OffsetShard, answer_of, is_removable
from .records import GroupRecord, OffsetRecord, group_id_of
from .replay import GroupReplay

__all__ = ("GroupOperations", "append_error", "resolve")

log = logging.getLogger(__name__)
T = TypeVar("T")

# How Kafka's group coordinator reports a failed __consumer_offsets append to clients (4.x's
# CoordinatorOperationExceptionHelper: a timed-out write is COORDINATOR_NOT_AVAILABLE, which every
# client retries; the old REBALANCE_IN_PROGRESS is fatal to a librdkafka ConsumerGroupHeartbeat).
_APPEND_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
}
_TOO_LARGE = {
    ErrorCode.message_too_large,
    ErrorCode.record_list_too_large,
    ErrorCode.invalid_fetch_size,
}


def append_error(exc: Exception, *, offsets: bool) -> ErrorCode:
    if not isinstance(exc, KafkaError):
        return ErrorCode.unknown_server_error
    if exc.code in _TOO_LARGE:
        return ErrorCode.invalid_commit_offset_size if offsets else ErrorCode.unknown_server_error
    return _APPEND_ERRORS.get(exc.code, exc.code)


def resolve(waiter: object, result: JoinGroupResult | SyncGroupResult) -> None:
    if isinstance(waiter, asyncio.Future) and not waiter.done():
        waiter.set_result(result)


GroupEffect = ClassicEffect | Timers  # what the group coordinator's runtime runs after a write (run_effect)
_Commit = tuple[c.CommitOffsets, CommitResult]  # a commit and what offset_shard.py decided
_Answer = dict[TopicPartition, ErrorCode]


class GroupOperations:
    runtime: CoordinatorRuntime[c.GroupMessage, GroupRecord, GroupEffect]  # GroupCoordinator's

    def __init__(self, logs: LogSource, config: GroupConfig, clock_ms: Callable[[], int]) -> None:
        self._logs = logs
        self.config = config
        self._clock_ms = clock_ms
        self.groups: dict[str, GroupMetadata] = {}
        self.num_partitions = config.offsets_topic_num_partitions
        self.offset_shard = OffsetShard(self.groups, config, self._topic_id)
        self.replay = GroupReplay(self.groups, lambda gid: GroupMetadata(gid, config, now_ms=clock_ms()), clock_ms)

    def _topic_id(self, topic: str) -> uuid.UUID | None:
        meta = self._logs.topics.get(topic)
        return None if meta is None else meta.topic_id

    # -- persistence -------------------------------------------------------------------------------

    async def write_records(self, records: Sequence[GroupRecord]) -> int:
        """The runtime's write: the records of one decision (one group's partition, one producer at
        most: a TxnOffsetCommit's are a batch of its transaction) in one batch; the offset of the first."""
        first, now = records[0], self._clock_ms()
        tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(group_id_of(first), self.num_partitions))
        encoded = [record.encode(now) for record in records]
        producer = first.producer if isinstance(first, OffsetRecord) else None
        if producer is None:
            batch = build_batch(encoded)
        else:
            batch = build_batch(encoded, producer_id=producer.producer_id, producer_epoch=producer.epoch,
                                base_sequence=0, transactional=True)
        info = await self._logs.get_log(tp).append(bytes(batch), AppendOrigin.COORDINATOR)
        return info.base_offset

    async def persist(self, records: Sequence[GroupRecord]) -> None:
        """Write the records, then replay them; a failed write raises and changes nothing."""
        await self.runtime.apply(self.replay, CoordinatorResult(response=None, records=tuple(records)))

    async def run_classic(self, group: GroupMetadata, result: ClassicResult[T], now: int, *,
                          retry: bool = True) -> None:
        """Apply a classic decision (classic_shard.py) on the runtime: write its record, replay it,
        take the rest of the decided group and deliver its answers. A failed write leaves the group
        as it was (but an empty generation): the answers carry the error, and the group rebalances."""
        gid = group.group_id
        if result.decided is not None:
            self.groups.setdefault(gid, group)  # a new group: its record is replayed into this one
        try:
            await self.runtime.apply(self.replay, classic.written(group, result))
        except Exception as exc:
            error = append_error(exc, offsets=False)
            log.warning("could not store group %s: %r", gid, exc)
            effects, follow_up = classic.failed(group, result, now, error)
            for effect in effects:
                await self.run_effect(effect)
            if follow_up is not None and retry:
                await self.run_classic(group, follow_up, now, retry=False)
            return
        if result.records:
            log.info("group %s: %s at generation %d with %d members (protocol %s)", gid, group.state,
                     group.generation_id, len(group.members), group.protocol_name)

    async def run_effect(self, effect: GroupEffect) -> None:
        """The runtime's: what a decision does besides its records, once they are replayed."""
        match effect:
            case Install():
                effect.run()
            case Reply(waiter, result):
                resolve(waiter, result)
            case KeepAlive():
                self._keep_alive(effect, self._clock_ms())
            case Timers(group_id):
                group = self.groups.get(group_id)
                if group is not None and group.consumer is not None:
                    effect.apply(group.consumer)
            case _:
                assert_never(effect)

    def _removable(self, group: GroupMetadata) -> bool:
        return is_removable(group)

    def _maybe_forget(self, group: GroupMetadata) -> None:
        if self._removable(group) and self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # -- membership ----------------------------------------------------------------------------------

    async def do_join(self, cmd: c.JoinGroup) -> None:
        params = cmd.params
        if not cmd.group_id:
            cmd.reply.set_result(
                JoinGroupResult(member_id=params.member_id, error=ErrorCode.invalid_group_id)
            )
            return
        group = self.groups.get(cmd.group_id)
        now = self._clock_ms()
        if group is None:
            if params.member_id:
                cmd.reply.set_result(
                    JoinGroupResult(member_id=params.member_id, error=ErrorCode.unknown_member_id)
                )
                return
            group = GroupMetadata(cmd.group_id, self.config, now_ms=now)  # added once its join is applied
        if group.consumer is not None:
            # An empty consumer group; one with members answers its classic members itself
            # (classic_operations.py).
            log.info("group %s: now a classic group (its consumer group was empty)", cmd.group_id)
        await self.run_classic(group, classic.join(group, params, now, cmd.reply), now)
        self._maybe_forget(group)

    async def do_sync(self, cmd: c.SyncGroup) -> None:
        group = self.groups.get(cmd.group_id)
        if not cmd.group_id or group is None:
            error = ErrorCode.invalid_group_id if not cmd.group_id else ErrorCode.unknown_member_id
            cmd.reply.set_result(SyncGroupResult(error=error))
            return
        now = self._clock_ms()
        await self.run_classic(group, classic.sync(group, cmd, now), now)

    def do_heartbeat(self, cmd: c.Heartbeat) -> ErrorCode:
        if not cmd.group_id:
            return ErrorCode.invalid_group_id
        group = self.groups.get(cmd.group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        result = classic.heartbeat(group, cmd.member_id, cmd.generation_id, cmd.group_instance_id)
        for effect in result.effects:
            if isinstance(effect, KeepAlive):
                self._keep_alive(effect, self._clock_ms())
        return result.response

    async def do_leave(self, cmd: c.LeaveGroup) -> None:
        if not cmd.group_id:
            cmd.reply.set_result((ErrorCode.invalid_group_id, []))
            return
        group = self.groups.get(cmd.group_id)
        if group is None:
            cmd.reply.set_result((ErrorCode.none, [ErrorCode.unknown_member_id] * len(cmd.members)))
            return
        now = self._clock_ms()
        result = classic.leave(group, cmd.members, now)
        await self.run_classic(group, result, now)
        cmd.reply.set_result(result.response)

    # -- offsets -------------------------------------------------------------------------------------

    def _keep_alive(self, effect: KeepAlive, now: int) -> None:
        group = self.groups.get(effect.group_id)
        member = None if group is None else group.members.get(effect.member_id)
        if member is not None:
            member.schedule_heartbeat(now)

    async def do_commits(self, cmds: Sequence[c.CommitOffsets]) -> list[dict[TopicPartition, ErrorCode]]:
        """OffsetCommits and TxnOffsetCommits, in order: each is decided alone (offset_shard.py), then
        the records of those bound for one __consumer_offsets partition (and producer) go in one
        append, as Kafka's coordinator runtime batches consecutive writes, and are replayed once in
        the log. A transaction's offsets are held pending until its marker (do_complete_txn)."""
        now = self._clock_ms()
        created: set[str] = set()
        decided = [(cmd, self.offset_shard.commit(cmd, now, created)) for cmd in cmds]
        appends: dict[tuple[int, ProducerIdAndEpoch | None], list[_Commit]] = {}
        for cmd, result in decided:
            for effect in result.effects:
                self._keep_alive(effect, now)
            if result.records:
                key = (partition_for(cmd.group_id, self.num_partitions), cmd.producer)
                appends.setdefault(key, []).append((cmd, result))
        answers = {id(cmd): answer_of(result) for cmd, result in decided}
        for together in appends.values():
            await self._write_commits(together, answers)
        return [answers[id(cmd)] for cmd in cmds]

    async def do_commit(self, cmd: c.CommitOffsets) -> dict[TopicPartition, ErrorCode]:
        return (await self.do_commits([cmd]))[0]

    async def _write_commits(self, together: list[_Commit], answers: dict[int, _Answer]) -> None:
        """One append for commits of one partition and producer, then replay their records. A batch
        refused as too large wrote nothing: each commit is tried alone, as if never batched, and gets
        the answer it would have had. Any other failure is every commit's (a retry could write twice
        what an unconfirmed append did write); nothing was applied."""
        try:
            await self.persist([record for _, result in together for record in result.records])
        except Exception as exc:
            if len(together) > 1 and isinstance(exc, KafkaError) and exc.code in _TOO_LARGE:
                for commit in together:
                    await self._write_commits([commit], answers)
                return
            groups = sorted({cmd.group_id for cmd, _ in together})
            log.warning("could not commit offsets of group %s: %r", ", ".join(groups), exc)
            error = append_error(exc, offsets=True)
            for cmd, result in together:
                answers[id(cmd)] |= {record.tp: error for record in result.records}

    def do_fetch(self, cmd: c.FetchOffsets) -> list[c.FetchedOffset] | ApiError:
        group = self.groups.get(cmd.group_id)
        error = None if group is None else validate_offset_fetch(group, cmd.member_id, cmd.member_epoch)
        if error is not None:
            return ApiError(error, f"member {cmd.member_id} at epoch {cmd.member_epoch} may not fetch "
                              f"the offsets of group {cmd.group_id}")
        if cmd.partitions is None:
            if group is None:
                return []
            return [self._fetched(tp, group) for tp in group.offsets.committed]
        out = []
        for tp in cmd.partitions:
            if group is not None and cmd.require_stable and group.offsets.is_pending(tp):
                out.append(
                    c.FetchedOffset(topic_partition=tp, error=ErrorCode.unstable_offset_commit)
                )
            else:
                out.append(self._fetched(tp, group))
        return out

    @staticmethod
    def _fetched(tp: TopicPartition, group: GroupMetadata | None) -> c.FetchedOffset:
        value = group.offsets.get(tp) if group is not None else None
        if value is None:
            return c.FetchedOffset(topic_partition=tp)
        return c.FetchedOffset(
            topic_partition=tp,
            committed_offset=value.committed_offset,
            committed_leader_epoch=value.committed_leader_epoch,
            metadata=value.metadata,
        )

    def do_complete_txn(self, cmd: c.CompleteTxn) -> None:
        group_ids = list(self.groups) if cmd.group_ids is None else cmd.group_ids
        self.replay.replay_end_txn(cmd.producer_id, cmd.commit, group_ids)
