"""Committed offsets as a pure shard, as Kafka's OffsetMetadataManager.

A commit is decided against the groups as they stand and changes nothing: commit() returns a
CoordinatorResult with the records to write (OffsetRecord, one per partition), the answer once
they are written, and the effect to run (a classic member's commit keeps its session alive).
The runtime appends the records and then replays them (replay.py), as the loader replays
__consumer_offsets at start-up, so live state and loaded state come from one path; a write that
fails leaves everything as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from storage.api import TopicPartition

from ..runtime import ApiError, CoordinatorResult
from . import commands as c
from .config import GroupConfig
from .group_offsets import validate_offset_commit
from .metadata import GroupMetadata
from .records import OffsetRecord
from .state import GroupState

__all__ = ("CommitResult", "KeepAlive", "OffsetShard", "answer_of", "is_removable")


@dataclass(frozen=True, slots=True)
class KeepAlive:
    """A member's commit counts as its heartbeat (Kafka reschedules the session at decision time,
    whether the write then succeeds or not): a timer, not state the records carry."""

    group_id: str
    member_id: str


_Answer = dict[TopicPartition, ErrorCode]  # each partition's error code (a commit is refused per partition)
CommitResult = CoordinatorResult[OffsetRecord, KeepAlive, _Answer]


def answer_of(result: CommitResult) -> _Answer:
    """A copy of the commit's answer, to fill in the partitions whose write fails."""
    assert not isinstance(result.response, ApiError), "a commit is refused per partition"
    return dict(result.response)


def is_removable(group: GroupMetadata) -> bool:
    """A group that holds nothing worth keeping: no members, generation, offsets or pending ones."""
    return (
        group.state is GroupState.EMPTY
        and (group.consumer is None or (not group.consumer.members and group.consumer.group_epoch == 0))
        and group.generation_id == 0
        and not group.pending_members
        and not group.offsets.has_offsets()
    )


class OffsetShard:
    """Decides OffsetCommit and TxnOffsetCommit; topic_id names a topic's id (None: no such topic)."""

    def __init__(self, groups: Mapping[str, GroupMetadata], config: GroupConfig,
                 topic_id: Callable[[str], uuid.UUID | None]) -> None:
        self.groups = groups
        self.config = config
        self._topic_id = topic_id

    def commit(self, cmd: c.CommitOffsets, now: int, created: set[str]) -> CommitResult:
        """Who may commit, and the records of what they may. created: the groups that commits decided
        before this one, in the same batch, will create (an unknown group is created by its first
        commit, as Kafka's getOrMaybeCreateClassicGroup)."""
        txn = cmd.producer
        if txn is not None and not cmd.group_id:  # Kafka lets only OffsetCommit name ""
            return _refused(cmd, ErrorCode.invalid_group_id)
        group = self.groups.get(cmd.group_id)
        if group is None:
            if cmd.generation_id >= 0 and cmd.group_id not in created:
                # A member of a group this broker does not know: an older generation. Kafka's
                # TxnOffsetCommit says so from v6 (KIP-1319) as GROUP_ID_NOT_FOUND.
                unknown = ErrorCode.group_id_not_found if txn is not None and cmd.api_version >= 6 \
                    else ErrorCode.illegal_generation
                return _refused(cmd, unknown)
            group = GroupMetadata(cmd.group_id, self.config, now_ms=now)  # what the first record creates
        error = validate_offset_commit(
            group, member_id=cmd.member_id, group_instance_id=cmd.group_instance_id,
            generation_id=cmd.generation_id, transactional=txn is not None, api_version=cmd.api_version,
            partitions=self._by_topic_id(cmd.offsets),
        )
        if error is ErrorCode.stale_member_epoch and txn is not None and cmd.api_version < 6:
            error = ErrorCode.illegal_generation  # TxnOffsetCommit before v6 has no STALE_MEMBER_EPOCH
        if error is not None:
            return _refused(cmd, error)
        keep_alive = () if txn is not None or cmd.member_id not in group.members \
            else (KeepAlive(cmd.group_id, cmd.member_id),)
        records, answer = self._records(cmd, now)
        if records and cmd.group_id not in self.groups:
            created.add(cmd.group_id)
        return CoordinatorResult(response=answer, records=records, effects=keep_alive)

    def _records(self, cmd: c.CommitOffsets, now: int) -> tuple[tuple[OffsetRecord, ...], _Answer]:
        """The records of the offsets to write, with the commit's time, and the answer: NONE for them,
        OFFSET_METADATA_TOO_LARGE for those refused for their metadata."""
        limit = self.config.offset_metadata_max_bytes
        expire = None if cmd.retention_ms is None or cmd.retention_ms < 0 else now + cmd.retention_ms
        records, answer = [], {}
        for tp, value in cmd.offsets.items():
            if len(value.metadata.encode()) > limit:
                answer[tp] = ErrorCode.offset_metadata_too_large
            else:
                records.append(OffsetRecord(cmd.group_id, tp, value.stamped(now, expire), cmd.producer))
                answer[tp] = ErrorCode.none
        return tuple(records), answer

    def _by_topic_id(self, offsets: Iterable[TopicPartition]) -> Iterator[tuple[uuid.UUID | None, int]]:
        """The committed partitions as consumer groups hold them: by topic id (None: no such topic).
        Lazy: only a consumer group's commit of an older member epoch reads them."""
        for tp in offsets:
            yield self._topic_id(tp.topic), tp.partition


def _refused(cmd: c.CommitOffsets, error: ErrorCode) -> CommitResult:
    return CoordinatorResult(response=dict.fromkeys(cmd.offsets, error))
