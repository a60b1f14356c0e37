"""Replaying one __consumer_offsets partition into groups at start-up.

The same records the coordinator writes are read back in log order, as Kafka's
GroupMetadataManager.doLoadGroupsAndOffsets does:
- plain offset commits set (or, as tombstones, delete) committed offsets;
- offset commits inside a transactional batch are held as pending under the batch's producer id,
  and the COMMIT or ABORT marker that follows in the same partition applies or drops them;
- a group metadata record replaces the group (members, generation, assignment), keeping its
  offsets; a group tombstone removes the group.
"""

from __future__ import annotations

import logging
import struct

from protocol.control import ControlRecordType, parse_control_type
from protocol.errors import CorruptRecordError
from protocol.record_batch import RecordBatchHeader
from protocol.records import Record, read_records
from storage.api import PartitionLog

from ..transaction.metadata import ProducerIdAndEpoch
from .config import GroupConfig
from .consumer_log import CONSUMER_RECORD_TYPES, decode_consumer_key, decode_consumer_value
from .consumer_persist import ConsumerRecord
from .log import GroupMetadataValue, OffsetCommitKey, parse_record
from .metadata import GroupMetadata
from .offsets import OffsetAndMetadata
from .records import ClassicRecord, OffsetRecord
from .replay import GroupReplay

__all__ = ("PartitionLoader",)

log = logging.getLogger(__name__)
_READ_BYTES = 1 << 20
# Share-group records (Kafka's types 10-15): the share coordinator replays them (coordinator/share/group_store.py).
_SHARE_RECORD_TYPES = frozenset(range(10, 16))


class PartitionLoader:
    """Rebuilds the groups of one partition into `groups` (shared across partitions)."""

    def __init__(self, groups: dict[str, GroupMetadata], config: GroupConfig, now_ms: int) -> None:
        self.groups = groups
        self._config = config
        self._now_ms = now_ms
        self._pending: dict[int, set[str]] = {}  # producer id -> groups with pending offsets
        # Replayed as the live coordinator replays what it writes (replay.py).
        self._replay = GroupReplay(groups, self._new_group, lambda: now_ms)

    async def load(self, plog: PartitionLog) -> int:
        """Replay the whole partition; return the number of records read."""
        offset, end, count = plog.log_start_offset, plog.log_end_offset, 0
        while offset < end:
            info = await plog.read(offset, _READ_BYTES)
            if not info.records:
                break
            data = b"".join(bytes(r) for r in info.records)
            for header, records in read_records(data):
                if header.last_offset >= offset:
                    self.apply_batch(header, records)
                    count += len(records)
                offset = max(offset, header.last_offset + 1)
        return count

    def apply_batch(self, header: RecordBatchHeader, records: list[Record]) -> None:
        if header.is_control:
            self._apply_marker(header, records)
            return
        for record in records:
            record_type = int.from_bytes(record.key[:2], "big", signed=True) \
                if record.key is not None and len(record.key) >= 2 else None
            if record_type in _SHARE_RECORD_TYPES:
                continue
            if record_type in CONSUMER_RECORD_TYPES:
                self._apply_consumer(record)
                continue
            try:
                key, value = parse_record(record)
            except ValueError as exc:
                log.warning(
                    "skipping unreadable __consumer_offsets record at %d: %s", record.offset, exc
                )
                continue
            if isinstance(key, OffsetCommitKey):
                assert value is None or isinstance(value, OffsetAndMetadata)
                self._apply_offset(header, record, key, value)
            else:
                assert value is None or isinstance(value, GroupMetadataValue)
                self._replay.replay(ClassicRecord(key.group, value))

    def _apply_consumer(self, record: Record) -> None:
        """A consumer-group (KIP-848) record: it makes (or keeps) the group a consumer group."""
        assert record.key is not None
        try:
            key = decode_consumer_key(record.key)
            value = None if record.value is None else decode_consumer_value(key, record.value)
        except (ValueError, IndexError, UnicodeDecodeError, struct.error) as exc:
            log.warning("skipping unreadable __consumer_offsets record at %d: %s", record.offset, exc)
            return
        self._replay.replay(ConsumerRecord(key, value))

    def _apply_marker(self, header: RecordBatchHeader, records: list[Record]) -> None:
        if not records:  # a marker batch the cleaner emptied: its transaction is long settled
            return
        try:
            control_type = parse_control_type(records[0].key if records else None)
        except CorruptRecordError as exc:
            log.warning("skipping unreadable control record at %d: %s", header.base_offset, exc)
            return
        if not isinstance(control_type, ControlRecordType):
            return
        commit = control_type is ControlRecordType.COMMIT
        self._replay.replay_end_txn(header.producer_id, commit, self._pending.pop(header.producer_id, set()))

    def _new_group(self, group_id: str) -> GroupMetadata:
        return GroupMetadata(group_id, self._config, now_ms=self._now_ms)

    def _apply_offset(
        self,
        header: RecordBatchHeader,
        record: Record,
        key: OffsetCommitKey,
        value: OffsetAndMetadata | None,
    ) -> None:
        producer = ProducerIdAndEpoch(producer_id=header.producer_id, epoch=header.producer_epoch) \
            if header.is_transactional else None
        self._replay.replay(OffsetRecord(key.group, key.topic_partition, value, producer), record.offset)
        if producer is not None and value is not None:
            self._pending.setdefault(producer.producer_id, set()).add(key.group)
