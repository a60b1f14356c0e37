"""Share-group records of __consumer_offsets, in Kafka 4.4's layouts (pure: no I/O).

Keys are not flexible: int16 record type, then strings (int16 length). Values start with int16
version 0 and are flexible (compact strings and arrays, tagged fields), as Kafka's
group-coordinator/src/main/resources/common/message/ShareGroup*.json define them:
  10 ShareGroupMemberMetadata            key group, member  value RackId?, ClientId, ClientHost,
                                                                  SubscribedTopicNames [string]
  11 ShareGroupMetadata                  key group          value Epoch int32, MetadataHash int64
  12 ShareGroupTargetAssignmentMetadata  key group          value AssignmentEpoch int32
  13 ShareGroupTargetAssignmentMember    key group, member  value TopicPartitions [uuid, [int32]]
  14 ShareGroupCurrentMemberAssignment   key group, member  value MemberEpoch, PreviousMemberEpoch
                                                                  int32, State int8,
                                                                  AssignedPartitions [uuid, [int32]]
  15 ShareGroupStatePartitionMetadata    key group          value InitializingTopics and
        InitializedTopics [uuid, name, [int32]], DeletingTopics [uuid, name]
A null value is a tombstone. The group coordinator's loader skips these types (SHARE_RECORD_TYPES).

group_records() gives every record a group stands for, keyed; share_group() rebuilds a group
from the last value of each key, as Kafka's replay does.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from protocol.records import decode_uvarint, encode_uvarint

from .group import ShareGroup, ShareMember

__all__ = ("SHARE_RECORD_TYPES", "RecordKey", "decode_key", "group_records", "share_group")

MEMBER_METADATA: Final = 10
GROUP_METADATA: Final = 11
TARGET_METADATA: Final = 12
TARGET_MEMBER: Final = 13
CURRENT_ASSIGNMENT: Final = 14
STATE_PARTITIONS: Final = 15
SHARE_RECORD_TYPES: Final = frozenset(range(10, 16))
_MEMBER_TYPES: Final = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
STABLE: Final = 0  # Kafka's MemberState.STABLE: share group members own nothing to revoke


@dataclass(frozen=True, slots=True, order=True)
class RecordKey:
    record_type: int
    group: str
    member_id: str | None = None

    def encode(self) -> bytes:
        out = bytearray(_I16.pack(self.record_type))
        for text in (self.group, *((self.member_id,) if self.member_id is not None else ())):
            raw = text.encode()
            out += _I16.pack(len(raw)) + raw
        return bytes(out)


def decode_key(data: bytes) -> RecordKey:
    record_type = _I16.unpack_from(data)[0]
    if record_type not in SHARE_RECORD_TYPES:
        raise ValueError(f"not a share group record type: {record_type}")
    texts, pos = [], 2
    while pos < len(data):
        n = _I16.unpack_from(data, pos)[0]
        texts.append(data[pos + 2:pos + 2 + n].decode())
        pos += 2 + n
    expected = 2 if record_type in _MEMBER_TYPES else 1
    if len(texts) != expected or pos != len(data):
        raise ValueError(f"malformed share group record key of type {record_type}")
    return RecordKey(record_type, texts[0], texts[1] if expected == 2 else None)


# -- writing ---------------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray(_I16.pack(0))  # value version 0

    def i32(self, v: int) -> None:
        self.out += _I32.pack(v)

    def string(self, s: str | None) -> None:
        if s is None:
            self.out += encode_uvarint(0)
            return
        raw = s.encode()
        self.out += encode_uvarint(len(raw) + 1) + raw

    def length(self, n: int) -> None:
        self.out += encode_uvarint(n + 1)

    def int32s(self, values: Iterable[int]) -> None:
        items = sorted(values)
        self.length(len(items))
        for v in items:
            self.i32(v)

    def topics(self, topics: Mapping[uuid.UUID, Iterable[int]], names: Mapping[uuid.UUID, str] | None = None) -> None:
        self.length(len(topics))
        for topic_id, partitions in sorted(topics.items(), key=lambda t: str(t[0])):
            self.out += topic_id.bytes
            if names is not None:
                self.string(names.get(topic_id, ""))
            self.int32s(partitions)
            self.out += b"\x00"

    def end(self) -> bytes:
        return bytes(self.out + b"\x00")


def _member_records(group: ShareGroup, member: ShareMember) -> dict[RecordKey, bytes]:
    g, m = group.group_id, member.member_id
    meta = _Writer()
    meta.string(member.rack_id)
    meta.string(member.client_id)
    meta.string(member.client_host)
    meta.length(len(member.subscribed_topic_names))
    for name in member.subscribed_topic_names:
        meta.string(name)
    current = _Writer()
    current.i32(member.member_epoch)
    current.i32(member.member_epoch)
    current.out += _I8.pack(STABLE)
    current.topics(member.assignment)
    return {RecordKey(MEMBER_METADATA, g, m): meta.end(), RecordKey(CURRENT_ASSIGNMENT, g, m): current.end()}


def group_records(group: ShareGroup, names: Mapping[uuid.UUID, str]) -> dict[RecordKey, bytes]:
    """Every record the group stands for (names: topic names by id, for the state partitions)."""
    g = group.group_id
    out: dict[RecordKey, bytes] = {}
    for member in group.members.values():
        out |= _member_records(group, member)
    for member_id, assignment in group.target.items():
        target = _Writer()
        target.topics(assignment)
        out[RecordKey(TARGET_MEMBER, g, member_id)] = target.end()
    epoch = _Writer()
    epoch.i32(group.group_epoch)
    epoch.out += _I64.pack(0)  # MetadataHash: 0 makes Kafka compute it again at its next heartbeat
    out[RecordKey(GROUP_METADATA, g)] = epoch.end()
    target_meta = _Writer()
    target_meta.i32(group.assignment_epoch)
    out[RecordKey(TARGET_METADATA, g)] = target_meta.end()
    state = _Writer()
    state.topics({t: range(count) for t, (count, _) in group.initializing.items()}, names)
    state.topics({t: range(count) for t, count in group.initialized.items()}, names)
    state.length(0)  # DeletingTopics: a deletion here is done before its answer
    out[RecordKey(STATE_PARTITIONS, g)] = state.end()
    return out


# -- reading ---------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        if self._fixed(_I16) != 0:
            raise ValueError("unknown share group record value version")

    def _fixed(self, s: struct.Struct) -> int:
        v: int = s.unpack_from(self.data, self.pos)[0]
        self.pos += s.size
        return v

    def i32(self) -> int:
        return self._fixed(_I32)

    def uvarint(self) -> int:
        v, self.pos = decode_uvarint(self.data, self.pos)
        return v

    def string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        self.pos += n
        if self.pos > len(self.data):
            raise ValueError("share group record value ends early")
        return self.data[self.pos - n:self.pos].decode()

    def count(self) -> int:
        return max(self.uvarint() - 1, 0)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def topics(self, named: bool = False) -> dict[uuid.UUID, frozenset[int]]:
        out = {}
        for _ in range(self.count()):
            topic_id = uuid.UUID(bytes=self.data[self.pos:self.pos + 16])
            self.pos += 16
            if named:
                self.string()
            out[topic_id] = frozenset(self.i32() for _ in range(self.count()))
            self.tags()
        return out


def _apply(group: ShareGroup, key: RecordKey, r: _Reader) -> None:
    member = group.members.setdefault(key.member_id, ShareMember(member_id=key.member_id)) \
        if key.member_id is not None and key.record_type != TARGET_MEMBER else None
    match key.record_type:
        case 10 if member is not None:
            member.rack_id, member.client_id, member.client_host = r.string(), r.string() or "", r.string() or ""
            member.subscribed_topic_names = tuple(r.string() or "" for _ in range(r.count()))
        case 11:
            group.group_epoch = r.i32()
        case 12:
            group.assignment_epoch = r.i32()
        case 13 if key.member_id is not None:
            group.target[key.member_id] = r.topics()
        case 14 if member is not None:
            member.member_epoch = r.i32()
            r.i32()
            r.pos += 1
            member.assignment = r.topics()
        case 15:
            group.initializing = {t: (_count(p), 0) for t, p in r.topics(named=True).items()}
            group.initialized = {t: _count(p) for t, p in r.topics(named=True).items()}


def _count(partitions: frozenset[int]) -> int:
    return max(partitions, default=-1) + 1


def share_group(group_id: str, values: Mapping[RecordKey, bytes]) -> ShareGroup | None:
    """The group the last values of its keys stand for (None without its metadata record, as
    Kafka removes a group with its ShareGroupMetadata tombstone). ValueError on bad bytes."""
    if RecordKey(GROUP_METADATA, group_id) not in values:
        return None
    group = ShareGroup(group_id)
    for key, data in sorted(values.items()):
        try:
            _apply(group, key, _Reader(data))
        except (struct.error, IndexError, UnicodeDecodeError) as exc:
            raise ValueError(f"malformed share group record {key}: {exc}") from exc
    group.members = {m: member for m, member in group.members.items() if member.subscribed_topic_names}
    group.target = {m: a for m, a in group.target.items() if m in group.members}
    return group
