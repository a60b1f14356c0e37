"""Durable share-partition state in the internal compacted topic __share_group_state.

Kafka's share coordinator writes ShareSnapshot and ShareUpdate records there; eosbroker writes one
snapshot record per change, keyed by the share-partition (group, topic id, partition), so
compaction keeps the latest only and a restart replays each key's last value. The append returns
once the record is in the log, before the acknowledgement it carries is answered: a kill -9
loses no acknowledgement, and only records acquired but not acknowledged come back (as available,
with the delivery count last written). A null value (tombstone) deletes the share-partition's
state (DeleteShareGroupOffsets, DeleteGroups). The topic lives in every storage backend, so the
state is as durable as any log there.

Layouts (big-endian), ours but with the fields of Kafka's ShareSnapshotKey/Value:
  key    int16 type (0) | string group (int16 length) | uuid topic id | int32 partition
  value  int16 version (1) | int32 state epoch | int32 leader epoch | int64 start offset |
         int32 batch count | batches [int64 first offset | int64 last offset | int8 state |
         int16 delivery count]
Version 0 (no leader epoch, read as -1) was written before the share coordinator fenced stale
share-partition leaders (state_shards.py); it is still read.
"""

from __future__ import annotations

import dataclasses
import struct
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from protocol.records import Record, build_batch, read_records
from storage.api import AppendOrigin, LogSource, PartitionLog, TopicPartition

from ..partitioning import partition_for
from .partition_state import RecordState, StateBatch

__all__ = ("READ_UNINITIALIZED", "SHARE_GROUP_STATE_TOPIC", "UNINITIALIZED_START_OFFSET", "WRITE_UNINITIALIZED",
           "SharePartitionKey", "ShareStateLog", "ShareStateStore", "StoredShareState", "delivery_complete_count",
           "uninitialized")

SHARE_GROUP_STATE_TOPIC: Final = "__share_group_state"
_KEY_TYPE: Final = 0
_I16, _I32, _BATCH = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">qqbh")
_HEADS: Final = {0: struct.Struct(">hiqi"), 1: struct.Struct(">hiiqi")}
_VERSION: Final = 1
_READ_BYTES: Final = 1 << 20
UNINITIALIZED_START_OFFSET: Final = -1  # initialized, its start offset left to its leader (Kafka's PartitionFactory)
# Kafka's ShareCoordinatorShard messages for a share-partition never initialized
READ_UNINITIALIZED: Final = "Read operation on uninitialized share partition not allowed."
WRITE_UNINITIALIZED: Final = "Write operation on uninitialized share partition not allowed."


def uninitialized(message: str) -> KafkaError:
    """A read or write of a share-partition that InitializeShareGroupState never initialized."""
    return KafkaError(ErrorCode.invalid_request, message)


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def __str__(self) -> str:  # Kafka's SharePartitionKey form, which the state topic is partitioned by
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


@dataclass(frozen=True, slots=True)
class StoredShareState:
    state_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    # the share-partition leader's epoch of its topic partition (-1: unknown), which the share
    # coordinator fences older leaders' reads and writes by
    leader_epoch: int = -1


def delivery_complete_count(stored: StoredShareState) -> int:
    """The offsets at or past the start offset whose delivery is complete (acknowledged or archived):
    Kafka's DeliveryCompleteCount, from which the share group's lag is reckoned (KIP-1226)."""
    done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    return sum(b.last_offset - max(b.first_offset, stored.start_offset) + 1 for b in stored.batches
               if b.state in done and b.last_offset >= stored.start_offset)


def encode_key(key: SharePartitionKey) -> bytes:
    group = key.group_id.encode()
    return _I16.pack(_KEY_TYPE) + _I16.pack(len(group)) + group + key.topic_id.bytes + _I32.pack(key.partition)


def decode_key(data: bytes) -> SharePartitionKey:
    try:
        (kind,), (length,) = _I16.unpack_from(data, 0), _I16.unpack_from(data, 2)
        group = data[4:4 + length].decode()
        topic_id = uuid.UUID(bytes=data[4 + length:20 + length])
        (partition,) = _I32.unpack_from(data, 20 + length)
    except (struct.error, ValueError) as exc:
        raise CorruptRecordError(f"unreadable {SHARE_GROUP_STATE_TOPIC} key: {exc}") from None
    if kind != _KEY_TYPE:
        raise CorruptRecordError(f"unknown {SHARE_GROUP_STATE_TOPIC} key type {kind}")
    return SharePartitionKey(group, topic_id, partition)


def encode_value(state: StoredShareState) -> bytes:
    head = _HEADS[_VERSION].pack(_VERSION, state.state_epoch, state.leader_epoch, state.start_offset,
                                 len(state.batches))
    return head + b"".join(_BATCH.pack(b.first_offset, b.last_offset, int(b.state), b.delivery_count)
                           for b in state.batches)


def decode_value(data: bytes) -> StoredShareState:
    try:
        (version,) = _I16.unpack_from(data, 0)
        if version not in _HEADS:
            raise CorruptRecordError(f"unknown {SHARE_GROUP_STATE_TOPIC} value version {version}")
        head = _HEADS[version]
        fields = head.unpack_from(data, 0)
        epoch, leader_epoch, start, count = fields[1:] if version else (fields[1], -1, *fields[2:])
        batches = tuple(StateBatch(first, last, RecordState(state), delivered)
                        for first, last, state, delivered in (_BATCH.unpack_from(data, head.size + i * _BATCH.size)
                                                              for i in range(count)))
    except (struct.error, ValueError) as exc:
        raise CorruptRecordError(f"unreadable {SHARE_GROUP_STATE_TOPIC} value: {exc}") from None
    return StoredShareState(epoch, start, batches, leader_epoch)


class ShareStateStore(Protocol):
    """Where share-partition states live: this broker's __share_group_state (ShareStateLog), or in
    cluster mode the share coordinator of each key, over ReadShareGroupState/WriteShareGroupState."""

    async def load(self) -> dict[SharePartitionKey, StoredShareState]:
        """Every state known at start-up (cluster mode: none, each is read when first used)."""
        ...

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> StoredShareState:
        """leader_epoch: the reading share-partition leader's (the share coordinator records it
        and fences older leaders with FENCED_LEADER_EPOCH); INVALID_REQUEST (uninitialized) for a
        key never initialized."""
        ...

    async def write(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        """Durable once it returns; None deletes the state."""
        ...


class ShareStateLog:
    """Writes and replays __share_group_state; the topic is made at the first write."""

    def __init__(self, logs: LogSource, num_partitions: int) -> None:
        self._logs = logs
        self._num_partitions = num_partitions

    async def ensure_topic(self) -> int:
        meta = self._logs.topics.get(SHARE_GROUP_STATE_TOPIC)
        if meta is None:
            try:
                meta = await self._logs.create_topic(SHARE_GROUP_STATE_TOPIC, self._num_partitions,
                                                     {"cleanup.policy": "compact", "compression.type": "producer"})
            except KafkaError as exc:  # another broker of the cluster just made it
                if exc.code is not ErrorCode.topic_already_exists:
                    raise
                meta = self._logs.topics[SHARE_GROUP_STATE_TOPIC]
        return meta.partitions

    def partition_of(self, key: SharePartitionKey | str) -> int:
        """The __share_group_state partition (the share coordinator's shard) of a key."""
        meta = self._logs.topics.get(SHARE_GROUP_STATE_TOPIC)
        return partition_for(str(key), meta.partitions if meta is not None else self._num_partitions)

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> StoredShareState:
        raise uninitialized(READ_UNINITIALIZED)  # load() read every state there is

    async def write(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        partitions = await self.ensure_topic()
        tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, partition_for(str(key), partitions))
        record = Record(timestamp=int(time.time() * 1000), key=encode_key(key),
                        value=None if state is None else encode_value(state))
        await self._logs.get_log(tp).append(bytes(build_batch([record])), AppendOrigin.COORDINATOR)

    async def load(self) -> dict[SharePartitionKey, StoredShareState]:
        """Every share-partition's last state, in log order per partition."""
        meta = self._logs.topics.get(SHARE_GROUP_STATE_TOPIC)
        out: dict[SharePartitionKey, StoredShareState] = {}
        for partition in range(meta.partitions if meta is not None else 0):
            out.update(await self.load_partition(partition))
        return out

    async def load_partition(self, partition: int) -> dict[SharePartitionKey, StoredShareState]:
        """One partition's last state of each key (a share coordinator shard's)."""
        out: dict[SharePartitionKey, StoredShareState] = {}
        for record in await _replay(self._logs.get_log(TopicPartition(SHARE_GROUP_STATE_TOPIC, partition))):
            key = decode_key(record.key or b"")
            if record.value is None:
                out.pop(key, None)
            else:
                out[key] = _later(out.get(key), decode_value(record.value))
        return out


def _later(before: StoredShareState | None, after: StoredShareState) -> StoredShareState:
    """The later state, keeping the highest leader epoch recorded (as Kafka's replay does)."""
    if before is None or before.leader_epoch <= after.leader_epoch:
        return after
    return dataclasses.replace(after, leader_epoch=before.leader_epoch)


async def _replay(plog: PartitionLog) -> Sequence[Record]:
    offset, end = plog.log_start_offset, plog.log_end_offset
    out: list[Record] = []
    while offset < end:
        info = await plog.read(offset, _READ_BYTES)
        if not info.records:
            break
        for header, records in read_records(b"".join(bytes(r) for r in info.records)):
            if header.last_offset >= offset:
                out.extend(r for r in records if r.offset >= offset)
            offset = max(offset, header.last_offset + 1)
    return out
