"""The records the group coordinator writes to __consumer_offsets, before they are encoded: each
one log record (Kafka's CoordinatorRecord), so the runtime's write gives each its own offset.

OffsetRecord is a committed offset (its tombstone deletes it; a TxnOffsetCommit's carries its
producer, whose transactional batch holds it until the marker); ClassicRecord a classic group's
metadata (its tombstone removes the group); ConsumerRecord one of a consumer group's records
(consumer_persist.py). replay.py replays all three, after a write and when loading alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.records import Record
from storage.api import TopicPartition

from ..transaction.metadata import ProducerIdAndEpoch
from .consumer_persist import ConsumerRecord
from .log import GroupMetadataValue, group_metadata_record, offset_commit_record
from .offsets import OffsetAndMetadata

__all__ = ("ClassicRecord", "GroupRecord", "OffsetRecord", "group_id_of")


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    """An OffsetCommit key and value; value None is the tombstone."""

    group_id: str
    tp: TopicPartition
    value: OffsetAndMetadata | None
    producer: ProducerIdAndEpoch | None = None  # a TxnOffsetCommit's: written in its transaction

    def encode(self, timestamp: int) -> Record:
        return offset_commit_record(self.group_id, self.tp, self.value, timestamp=timestamp)


@dataclass(frozen=True, slots=True)
class ClassicRecord:
    """A classic group's metadata record (members, generation, assignment); value None is the
    group's tombstone."""

    group_id: str
    value: GroupMetadataValue | None = None

    def encode(self, timestamp: int) -> Record:
        return group_metadata_record(self.group_id, self.value, timestamp=timestamp)


GroupRecord = OffsetRecord | ClassicRecord | ConsumerRecord


def group_id_of(record: GroupRecord) -> str:
    """The group whose __consumer_offsets partition holds the record."""
    return record.key.group if isinstance(record, ConsumerRecord) else record.group_id
