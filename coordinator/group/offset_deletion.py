"""What removing offsets and groups writes, decided without changing anything (Kafka's
OffsetMetadataManager.deleteOffsets and cleanupExpiredOffsets, GroupMetadataManager's group
tombstones): OffsetDelete, DeleteGroups, the offsets of deleted topics, and the retention check.
The records are tombstones; replaying them (replay.py) is what removes the offsets
and the group, once they are in __consumer_offsets. A write that fails leaves both in place, and
the next check or request tries again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Never

from kio.schema.errors import ErrorCode

from storage.api import TopicPartition

from ..runtime import CoordinatorResult
from .consumer_persist import tombstones as consumer_tombstones
from .group_offsets import expired_offsets
from .metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata
from .records import ClassicRecord, GroupRecord, OffsetRecord
from .state import GroupState

__all__ = ("DeleteOffsetsAnswer", "Expiry", "delete_group", "delete_offsets", "expire", "offsets_of_topics")

DeleteOffsetsAnswer = tuple[ErrorCode, dict[TopicPartition, ErrorCode]]


def tombstones(group: GroupMetadata, partitions: Iterable[TopicPartition], *,
               group_too: bool) -> tuple[GroupRecord, ...]:
    """The offsets' tombstones; with group_too, then its consumer group's and its own."""
    records: list[GroupRecord] = [OffsetRecord(group.group_id, tp, None) for tp in partitions]
    if group_too:
        records += [] if group.consumer is None else consumer_tombstones(group.consumer)
        records.append(ClassicRecord(group.group_id))
    return tuple(records)


def delete_offsets(group: GroupMetadata | None,
                   partitions: Iterable[TopicPartition]) -> CoordinatorResult[GroupRecord, Never, DeleteOffsetsAnswer]:
    """OffsetDelete: a group's offsets of topics none of its members subscribes to."""
    if group is None or group.state is GroupState.DEAD:
        return CoordinatorResult(response=(ErrorCode.group_id_not_found, {}))
    consumer = group.consumer
    if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return CoordinatorResult(response=(ErrorCode.non_empty_group, {}))
    answer, deletable = {}, []
    for tp in partitions:
        if consumer is not None:
            subscribed = tp.topic in consumer.subscribed_topic_names()
        else:
            subscribed = group.subscribed_topics is None or tp.topic in group.subscribed_topics
        if not group.is_empty() and subscribed:
            answer[tp] = ErrorCode.group_subscribed_to_topic
        else:
            answer[tp] = ErrorCode.none
            if group.offsets.get(tp) is not None:
                deletable.append(tp)
    records = tombstones(group, deletable, group_too=False)
    return CoordinatorResult(response=(ErrorCode.none, answer), records=records)


def delete_group(group: GroupMetadata | None) -> CoordinatorResult[GroupRecord, Never, ErrorCode]:
    """DeleteGroups of one group: only an empty one, with its offsets, committed or pending in a
    transaction (Kafka's deleteAllOffsets: a tombstone removes both)."""
    if group is None or group.state is GroupState.DEAD:
        return CoordinatorResult(response=ErrorCode.group_id_not_found)
    if not group.is_empty():
        return CoordinatorResult(response=ErrorCode.non_empty_group)
    offsets = group.offsets
    pending = (tp for by_producer in offsets.pending.values() for tp in by_producer)
    partitions = dict.fromkeys([*offsets.committed, *pending])
    records = tombstones(group, partitions, group_too=True)
    return CoordinatorResult(response=ErrorCode.none, records=records)


def offsets_of_topics(group: GroupMetadata, topics: Collection[str]) -> tuple[GroupRecord, ...]:
    """The tombstones of a group's offsets of deleted topics (Kafka's handleDeletedPartitions)."""
    gone = [tp for tp in group.offsets.committed if tp.topic in topics]
    return tombstones(group, gone, group_too=False)


@dataclass(frozen=True, slots=True)
class Expiry:
    """What the retention check removes from one group: expired offsets, and the group itself
    when it is empty and holds nothing else."""

    records: tuple[GroupRecord, ...]
    expired: int
    dead: bool


def expire(group: GroupMetadata, now: int) -> Expiry:
    expired = expired_offsets(group, now)
    offsets = group.offsets
    dead = group.is_empty() and not offsets.pending and len(expired) == len(offsets)
    if not expired and not dead:
        return Expiry((), 0, dead=False)
    return Expiry(tombstones(group, expired, group_too=dead), len(expired), dead)
