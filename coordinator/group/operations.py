"""What the GroupCoordinator actor does with each command, inside its owner task.

Every method here runs in GroupCoordinator._run, one at a time; the only awaits are appends to
__consumer_offsets, so no other command sees a half-applied change. Errors that belong in a
response are returned (or set as results), never raised out of the actor.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypedDict

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError
from protocol.records import Record, build_batch
from storage.api import AppendOrigin, LogAppendInfo, LogSource, TopicPartition

from ..runtime import ApiError
from ..transaction.metadata import ProducerIdAndEpoch
from . import commands as c
from .config import GroupConfig
from .consumer_persist import tombstones as consumer_tombstones
from .group_offsets import validate_offset_commit, validate_offset_fetch
from .log import CONSUMER_OFFSETS_TOPIC, group_metadata_record, offset_commit_record, partition_for
from .member import JoinGroupResult, Outcome, SyncGroupResult
from .metadata import GroupMetadata
from .offset_commits import PendingCommit
from .offsets import OffsetAndMetadata
from .snapshot import to_value
from .state import GroupState

__all__ = ("GroupOperations", "append_error", "resolve")

log = logging.getLogger(__name__)

# How Kafka's GroupMetadataManager reports a failed __consumer_offsets append to clients.
_APPEND_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.request_timed_out: ErrorCode.rebalance_in_progress,
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


def _with_error(result: JoinGroupResult | SyncGroupResult, error: ErrorCode) -> JoinGroupResult | SyncGroupResult:
    if isinstance(result, JoinGroupResult):
        return JoinGroupResult(member_id=result.member_id, error=error)
    return SyncGroupResult(error=error)


class _TxnBatch(TypedDict, total=False):
    """_append's keywords for a transactional producer's offsets (none: plain records)."""

    producer_id: int
    producer_epoch: int
    transactional: bool


class GroupOperations:
    def __init__(self, logs: LogSource, config: GroupConfig, clock_ms: Callable[[], int]) -> None:
        self._logs = logs
        self.config = config
        self._clock_ms = clock_ms
        self.groups: dict[str, GroupMetadata] = {}
        self.num_partitions = config.offsets_topic_num_partitions

    # -- persistence -------------------------------------------------------------------------------

    async def _append(
        self,
        group_id: str,
        records: Sequence[Record],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
    ) -> LogAppendInfo:
        tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(group_id, self.num_partitions))
        batch = build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0 if transactional else -1,
            transactional=transactional,
        )
        return await self._logs.get_log(tp).append(bytes(batch), AppendOrigin.COORDINATOR)

    async def append_records(self, group_id: str, records: Sequence[Record]) -> LogAppendInfo:
        """Append plain (non-transactional) records to the group's __consumer_offsets partition."""
        return await self._append(group_id, records)

    async def complete(self, group: GroupMetadata, outcome: Outcome, now: int) -> None:
        """Persist the group if the outcome asks, then deliver its replies."""
        replies = outcome.replies
        if outcome.store_group:
            record = group_metadata_record(group.group_id, to_value(group), timestamp=now)
            try:
                await self._append(group.group_id, [record])
            except Exception as exc:
                error = append_error(exc, offsets=False)
                log.warning("could not store group %s: %r", group.group_id, exc)
                replies = [(w, _with_error(r, error)) for w, r in replies]
                replies += group.store_failed(now).replies
            else:
                log.info(
                    "group %s: %s at generation %d with %d members (protocol %s)",
                    group.group_id,
                    group.state,
                    group.generation_id,
                    len(group.members),
                    group.protocol_name,
                )
        for waiter, result in replies:
            resolve(waiter, result)

    async def write_tombstones(
        self,
        group: GroupMetadata,
        partitions: Iterable[TopicPartition],
        *,
        group_too: bool,
        now: int,
    ) -> None:
        records = [
            offset_commit_record(group.group_id, tp, None, timestamp=now) for tp in partitions
        ]
        if group_too:
            if group.consumer is not None:
                records += consumer_tombstones(group.consumer, now)
            records.append(group_metadata_record(group.group_id, None, timestamp=now))
        if records:
            await self._append(group.group_id, records)

    def _removable(self, group: GroupMetadata) -> bool:
        """A group that only exists in memory and holds nothing worth keeping."""
        return (
            group.state is GroupState.EMPTY
            and (group.consumer is None or (not group.consumer.members and group.consumer.group_epoch == 0))
            and group.generation_id == 0
            and not group.pending_members
            and not group.offsets.has_offsets()
        )

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
            group = self.groups[cmd.group_id] = GroupMetadata(cmd.group_id, self.config, now_ms=now)
        if group.consumer is not None:
            # An empty consumer group; one with members answers its classic members itself
            # (classic_operations.py).
            log.info("group %s: now a classic group (its consumer group was empty)", cmd.group_id)
            group.consumer = None
        await self.complete(group, group.join(params, now, cmd.reply), now)
        self._maybe_forget(group)

    async def do_sync(self, cmd: c.SyncGroup) -> None:
        group = self.groups.get(cmd.group_id)
        if not cmd.group_id or group is None:
            error = ErrorCode.invalid_group_id if not cmd.group_id else ErrorCode.unknown_member_id
            cmd.reply.set_result(SyncGroupResult(error=error))
            return
        now = self._clock_ms()
        outcome = group.sync(
            member_id=cmd.member_id,
            generation_id=cmd.generation_id,
            group_instance_id=cmd.group_instance_id,
            protocol_type=cmd.protocol_type,
            protocol_name=cmd.protocol_name,
            assignments=cmd.assignments,
            now_ms=now,
            waiter=cmd.reply,
        )
        await self.complete(group, outcome, now)

    def do_heartbeat(self, cmd: c.Heartbeat) -> ErrorCode:
        if not cmd.group_id:
            return ErrorCode.invalid_group_id
        group = self.groups.get(cmd.group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        try:
            group.heartbeat(
                cmd.member_id, cmd.generation_id, cmd.group_instance_id, self._clock_ms()
            )
        except KafkaError as exc:
            return exc.code
        return ErrorCode.none

    async def do_leave(self, cmd: c.LeaveGroup) -> None:
        if not cmd.group_id:
            cmd.reply.set_result((ErrorCode.invalid_group_id, []))
            return
        group = self.groups.get(cmd.group_id)
        if group is None:
            cmd.reply.set_result((ErrorCode.none, [ErrorCode.unknown_member_id] * len(cmd.members)))
            return
        now = self._clock_ms()
        try:
            errors, outcome = group.leave(cmd.members, now)
        except KafkaError as exc:
            cmd.reply.set_result((exc.code, []))
            return
        await self.complete(group, outcome, now)
        cmd.reply.set_result((ErrorCode.none, errors))

    # -- offsets -------------------------------------------------------------------------------------

    def _stamped(self, cmd: c.CommitOffsets, now: int) -> tuple[dict[TopicPartition, OffsetAndMetadata],
                                                                  dict[TopicPartition, ErrorCode]]:
        """The offsets to write, with the commit's time, and those refused for their metadata."""
        limit = self.config.offset_metadata_max_bytes
        expire = None if cmd.retention_ms is None or cmd.retention_ms < 0 else now + cmd.retention_ms
        ok, errors = {}, {}
        for tp, value in cmd.offsets.items():
            if len(value.metadata.encode()) > limit:
                errors[tp] = ErrorCode.offset_metadata_too_large
            else:
                ok[tp] = value.stamped(now, expire)
        return ok, errors

    def _decide_commit(self, cmd: c.CommitOffsets, now: int) -> PendingCommit:
        """Validate the commit against its group as it stands; nothing is written or applied yet."""
        txn = cmd.producer
        if txn is not None and not cmd.group_id:  # Kafka lets only OffsetCommit name ""
            return PendingCommit.refused(cmd, None, ErrorCode.invalid_group_id)
        group = self.groups.get(cmd.group_id)
        if group is None:
            if cmd.generation_id >= 0:
                # A member of a group this broker does not know: an older generation. Kafka's
                # TxnOffsetCommit says so from v6 (KIP-1319) as GROUP_ID_NOT_FOUND.
                unknown = ErrorCode.group_id_not_found if txn is not None and cmd.api_version >= 6 \
                    else ErrorCode.illegal_generation
                return PendingCommit.refused(cmd, None, unknown)
            group = self.groups[cmd.group_id] = GroupMetadata(cmd.group_id, self.config, now_ms=now)
        error = validate_offset_commit(
            group, member_id=cmd.member_id, group_instance_id=cmd.group_instance_id,
            generation_id=cmd.generation_id, transactional=txn is not None, api_version=cmd.api_version,
            partitions=self._by_topic_id(cmd.offsets),
        )
        if error is ErrorCode.stale_member_epoch and txn is not None and cmd.api_version < 6:
            error = ErrorCode.illegal_generation  # TxnOffsetCommit before v6 has no STALE_MEMBER_EPOCH
        if error is not None:
            return PendingCommit.refused(cmd, group, error)
        member = group.members.get(cmd.member_id)
        if txn is None and member is not None:  # a commit counts as a heartbeat
            member.schedule_heartbeat(now)
        offsets, result = self._stamped(cmd, now)
        return PendingCommit(cmd=cmd, group=group, offsets=offsets, result=result)

    def _by_topic_id(self, offsets: Iterable[TopicPartition]) -> Iterator[tuple[uuid.UUID | None, int]]:
        """The committed partitions as consumer groups hold them: by topic id (None: no such topic).
        Lazy: only a consumer group's commit of an older member epoch reads them."""
        topics = self._logs.topics
        for tp in offsets:
            meta = topics.get(tp.topic)
            yield (None if meta is None else meta.topic_id), tp.partition

    async def do_commits(self, cmds: Sequence[c.CommitOffsets]) -> list[dict[TopicPartition, ErrorCode]]:
        """OffsetCommits and TxnOffsetCommits, in order: each is validated alone, then the records of
        those bound for one __consumer_offsets partition (and producer) go in one append, as Kafka's
        coordinator runtime batches consecutive writes; each is applied once its records are in the
        log. A transaction's offsets are held pending until its marker (do_complete_txn)."""
        now = self._clock_ms()
        decided = [self._decide_commit(cmd, now) for cmd in cmds]
        appends: dict[tuple[int, ProducerIdAndEpoch | None], list[PendingCommit]] = {}
        for pending in decided:
            if pending.offsets:
                key = (partition_for(pending.cmd.group_id, self.num_partitions), pending.cmd.producer)
                appends.setdefault(key, []).append(pending)
        for together in appends.values():
            await self._write_commits(together, now)
        # Not before: a group created by one commit must stay for the next commits of the batch.
        for pending in decided:
            if pending.group is not None:
                self._maybe_forget(pending.group)
        return [pending.result for pending in decided]

    async def do_commit(self, cmd: c.CommitOffsets) -> dict[TopicPartition, ErrorCode]:
        return (await self.do_commits([cmd]))[0]

    async def _write_commits(self, together: list[PendingCommit], now: int) -> None:
        """One append for commits of one partition and producer, then apply each. A batch refused
        as too large wrote nothing: each commit is tried alone, as if never batched, and gets the
        answer it would have had. Any other failure is every commit's (a retry could write twice
        what an unconfirmed append did write)."""
        first = together[0]
        txn = first.cmd.producer
        batch: _TxnBatch = {} if txn is None else {
            "producer_id": txn.producer_id, "producer_epoch": txn.epoch, "transactional": True}
        try:
            info = await self._append(first.cmd.group_id, [r for p in together for r in p.records(now)], **batch)
        except Exception as exc:
            if len(together) > 1 and isinstance(exc, KafkaError) and exc.code in _TOO_LARGE:
                for pending in together:
                    await self._write_commits([pending], now)
                return
            groups = sorted({pending.cmd.group_id for pending in together})
            log.warning("could not commit offsets of group %s: %r", ", ".join(groups), exc)
            error = append_error(exc, offsets=True)
            for pending in together:
                pending.fail(error)
            return
        record_offset = info.base_offset
        for pending in together:
            record_offset = pending.apply(record_offset)

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
        ids = self.groups.keys() if cmd.group_ids is None else cmd.group_ids
        for group_id in list(ids):
            group = self.groups.get(group_id)
            if group is not None:
                group.offsets.complete_txn(cmd.producer_id, cmd.commit)
                self._maybe_forget(group)
