"""Records of the internal compacted topic __consumer_offsets, in Kafka's own layouts.

Every key and value starts with an int16 version. Keys (the version doubles as the record type):
  0, 1  OffsetCommitKey    group string, topic string, partition int32
  2     GroupMetadataKey   group string
Values:
  OffsetCommitValue  v0 offset int64, metadata string, commit_timestamp int64
                     v1 + expire_timestamp int64 (last)        v2 = v0
                     v3 offset, leader_epoch int32, metadata, commit_timestamp
                     v4 = v3, flexible (compact strings, tagged fields)
  GroupMetadataValue protocol_type string, generation int32, protocol string?, leader string?,
                     current_state_timestamp int64 (v2+), members [
                       member_id, group_instance_id string? (v3+), client_id, client_host,
                       rebalance_timeout int32 (v1+), session_timeout int32,
                       subscription bytes, assignment bytes ]; v4 is flexible
A null value is a tombstone: the offset, or the whole group, is gone. We write what Kafka 3.x
writes (key 1, OffsetCommitValue v3 or v1 when an expire timestamp is set, GroupMetadataValue v3)
and read every version, so a data directory written by Kafka's layouts can be replayed.

The partition of a group is abs(java String.hashCode(group_id)) % offsets.topic.num.partitions,
as Kafka's GroupMetadataManager.partitionFor computes it, so clients and tools agree.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, replace

from protocol.records import Record, decode_uvarint
from storage.api import TopicPartition

from ..partitioning import partition_for
from .offsets import OffsetAndMetadata

__all__ = (
    "CONSUMER_OFFSETS_TOPIC",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadataValue",
    "OffsetCommitKey",
    "group_metadata_record",
    "offset_commit_record",
    "parse_record",
    "partition_for",
)

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout: int = -1
    session_timeout: int = 0
    subscription: bytes = b""
    assignment: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadataValue, ...] = ()


# -- writing ---------------------------------------------------------------------------------


class _Writer:
    def __init__(self, version: int) -> None:
        self.buf = bytearray(_I16.pack(version))

    def i32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def i64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def string(self, s: str | None) -> None:
        if s is None:
            self.buf += _I16.pack(-1)
            return
        data = s.encode()
        self.buf += _I16.pack(len(data)) + data

    def bytes_(self, data: bytes) -> None:
        self.buf += _I32.pack(len(data)) + data


@functools.lru_cache(maxsize=4096)  # a group commits the same partitions again and again
def encode_offset_commit_key(group: str, tp: TopicPartition) -> bytes:
    w = _Writer(1)
    w.string(group)
    w.string(tp.topic)
    w.i32(tp.partition)
    return bytes(w.buf)


def encode_offset_commit_value(value: OffsetAndMetadata) -> bytes:
    if value.expire_timestamp is not None:
        w = _Writer(1)
        w.i64(value.committed_offset)
        w.string(value.metadata)
        w.i64(value.commit_timestamp)
        w.i64(value.expire_timestamp)
        return bytes(w.buf)
    w = _Writer(3)
    w.i64(value.committed_offset)
    w.i32(value.committed_leader_epoch)
    w.string(value.metadata)
    w.i64(value.commit_timestamp)
    return bytes(w.buf)


def encode_group_metadata_key(group: str) -> bytes:
    w = _Writer(2)
    w.string(group)
    return bytes(w.buf)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    w = _Writer(3)
    w.string(value.protocol_type)
    w.i32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    w.i64(value.current_state_timestamp)
    w.i32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        w.i32(m.rebalance_timeout)
        w.i32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
    return bytes(w.buf)


def offset_commit_record(
    group: str, tp: TopicPartition, value: OffsetAndMetadata | None, *, timestamp: int
) -> Record:
    """The record for one committed offset; value None is the tombstone that deletes it."""
    return Record(
        timestamp=timestamp,
        key=encode_offset_commit_key(group, tp),
        value=None if value is None else encode_offset_commit_value(value),
    )


def group_metadata_record(
    group: str, value: GroupMetadataValue | None, *, timestamp: int
) -> Record:
    return Record(
        timestamp=timestamp,
        key=encode_group_metadata_key(group),
        value=None if value is None else encode_group_metadata_value(value),
    )


# -- reading ---------------------------------------------------------------------------------


class _Reader:
    """Reads one key or value; flexible versions use compact lengths and tagged fields."""

    def __init__(self, data: bytes, flexible_from: int | None = None) -> None:
        self.data, self.pos = data, 2
        (self.version,) = _I16.unpack_from(data, 0)
        self.flexible = flexible_from is not None and self.version >= flexible_from

    def _fixed(self, s: struct.Struct) -> int:
        (v,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return int(v)

    def i32(self) -> int:
        return self._fixed(_I32)

    def i64(self) -> int:
        return self._fixed(_I64)

    def uvarint(self) -> int:
        result, self.pos = decode_uvarint(self.data, self.pos)
        return result

    def _length(self, s: struct.Struct) -> int:
        return self.uvarint() - 1 if self.flexible else self._fixed(s)

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("field runs past the end of the record")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def nullable_string(self) -> str | None:
        n = self._length(_I16)
        return None if n < 0 else self._take(n).decode()

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise ValueError("null in a non-nullable string field")
        return s

    def bytes_(self) -> bytes:
        return self._take(self._length(_I32))

    def array_length(self) -> int:
        return self._length(_I32)

    def tagged_fields(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self._take(self.uvarint())


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey:
    r = _Reader(data)
    if r.version in (0, 1):
        return OffsetCommitKey(group=r.string(), topic=r.string(), partition=r.i32())
    if r.version == 2:
        return GroupMetadataKey(group=r.string())
    raise ValueError(f"unknown __consumer_offsets key version {r.version}")


def _value_reader(data: bytes, schema: str) -> _Reader:
    # Both value schemas have versions 0-4, and v4 is their first flexible version.
    r = _Reader(data, flexible_from=4)
    if not 0 <= r.version <= 4:
        raise ValueError(f"unknown {schema} version {r.version}")
    return r


# The decoders name their fields in the schema's order: each keyword argument reads the next one.


def decode_offset_commit_value(data: bytes) -> OffsetAndMetadata:
    r = _value_reader(data, "OffsetCommitValue")
    value = OffsetAndMetadata(committed_offset=r.i64(), committed_leader_epoch=r.i32() if r.version >= 3 else -1,
                              metadata=r.string(), commit_timestamp=r.i64(),
                              expire_timestamp=r.i64() if r.version == 1 else None)
    r.tagged_fields()
    return value if value.expire_timestamp != -1 else replace(value, expire_timestamp=None)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _value_reader(data, "GroupMetadataValue")
    value = GroupMetadataValue(protocol_type=r.string(), generation=r.i32(), protocol=r.nullable_string(),
                               leader=r.nullable_string(), current_state_timestamp=r.i64() if r.version >= 2 else -1,
                               members=tuple(_decode_member(r) for _ in range(max(r.array_length(), 0))))
    r.tagged_fields()
    return value


def _decode_member(r: _Reader) -> MemberMetadataValue:
    value = MemberMetadataValue(member_id=r.string(), group_instance_id=r.nullable_string() if r.version >= 3 else None,
                                client_id=r.string(), client_host=r.string(),
                                rebalance_timeout=r.i32() if r.version >= 1 else -1, session_timeout=r.i32(),
                                subscription=r.bytes_(), assignment=r.bytes_())
    r.tagged_fields()
    # Before v1 a member had one timeout: its session timeout bounded the rebalance too.
    return value if value.rebalance_timeout != -1 else replace(value, rebalance_timeout=value.session_timeout)


def parse_record(
    record: Record,
) -> (
    tuple[OffsetCommitKey, OffsetAndMetadata | None]
    | tuple[GroupMetadataKey, GroupMetadataValue | None]
):
    """Decode one __consumer_offsets record; raise ValueError on bytes that are not one."""
    if record.key is None:
        raise ValueError("__consumer_offsets record without a key")
    try:
        key = decode_key(record.key)
        if isinstance(key, OffsetCommitKey):
            value = None if record.value is None else decode_offset_commit_value(record.value)
            return key, value
        return key, None if record.value is None else decode_group_metadata_value(record.value)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed __consumer_offsets record: {exc}") from exc
