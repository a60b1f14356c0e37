"""Consumer-group (KIP-848) records of __consumer_offsets, in Kafka's own layouts.

Keys are not flexible and start with their version, which is also the record type; values are
flexible (compact strings and arrays, tagged fields) at version 0, as Kafka's
group-coordinator/src/main/resources/common/message/ConsumerGroup*.json define them:
  3 ConsumerGroupMetadata               key group        value Epoch int32
  5 ConsumerGroupMemberMetadata         key group, member value InstanceId?, RackId?, ClientId,
      ClientHost, SubscribedTopicNames [string], SubscribedTopicRegex?, RebalanceTimeoutMs int32,
      ServerAssignor?; tagged field 0 ClassicMemberMetadata {SessionTimeoutMs int32,
      SupportedProtocols [Name string, Metadata bytes]} for a member that speaks the classic protocol
  6 ConsumerGroupTargetAssignmentMetadata key group      value AssignmentEpoch int32
  7 ConsumerGroupTargetAssignmentMember key group, member value TopicPartitions [uuid, [int32]]
  8 ConsumerGroupCurrentMemberAssignment key group, member value MemberEpoch, PreviousMemberEpoch
      int32, State int8, AssignedPartitions and PartitionsPendingRevocation [uuid, [int32]], each
      topic with tagged field 0 AssignmentEpochs [int32] (Kafka 4.3+, KIP-1251; without it, or of
      another length, the partitions count as assigned at the member epoch, as Kafka reads them)
Key 4 (ConsumerGroupPartitionMetadata) is not written: the subscribed topics' metadata is derived
from the topics at load time. A null value is a tombstone.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, replace
from typing import Final

from protocol.records import Record, encode_uvarint

from .consumer_member import Assignment, AssignmentEpochs, ClassicMemberMetadata, ConsumerGroupMember, MemberState
from .log import _Reader

__all__ = (
    "CURRENT_MEMBER_ASSIGNMENT",
    "TARGET_ASSIGNMENT_MEMBER",
    "TARGET_ASSIGNMENT_METADATA",
    "MEMBER_METADATA",
    "GROUP_METADATA",
    "CONSUMER_RECORD_TYPES",
    "ConsumerRecordKey",
    "ConsumerValue",
    "CurrentAssignment",
    "consumer_record",
    "decode_consumer_key",
    "decode_consumer_value",
    "encode_consumer_value",
    "with_current",
)

GROUP_METADATA: Final = 3
MEMBER_METADATA: Final = 5
TARGET_ASSIGNMENT_METADATA: Final = 6
TARGET_ASSIGNMENT_MEMBER: Final = 7
CURRENT_MEMBER_ASSIGNMENT: Final = 8
CONSUMER_RECORD_TYPES: Final = frozenset({3, 5, 6, 7, 8})
_I8, _I16, _I32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerRecordKey:
    record_type: int
    group: str
    member_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Assignment
    pending_revocation: Assignment
    assignment_epochs: AssignmentEpochs = field(default_factory=dict)


# A decoded value: an epoch (3, 6), a member's subscription (5), a target (7), a current one (8).
ConsumerValue = int | ConsumerGroupMember | Assignment | CurrentAssignment


class _Compact:
    """Writer of one flexible value: compact lengths are unsigned varints of length + 1."""

    def __init__(self, headless: bool = False) -> None:
        """headless: a tagged field's body, without the value's version."""
        self.buf = bytearray() if headless else bytearray(_I16.pack(0))

    def i32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def string(self, s: str | None) -> None:
        if s is None:
            self.buf += encode_uvarint(0)
            return
        data = s.encode()
        self.buf += encode_uvarint(len(data) + 1) + data

    def length(self, n: int) -> None:
        self.buf += encode_uvarint(n + 1)

    def assignment(self, a: Assignment, epochs: AssignmentEpochs | None = None) -> None:
        """Topics and partitions; with `epochs`, each topic's AssignmentEpochs (tag 0)."""
        self.length(len(a))
        for topic_id, parts in sorted(a.items()):
            self.buf += topic_id.bytes
            ordered = sorted(parts)
            self.length(len(ordered))
            for p in ordered:
                self.i32(p)
            if epochs is None:
                self.buf += b"\x00"  # no tagged fields
                continue
            tag = _Compact(headless=True)
            tag.length(len(ordered))
            for p in ordered:
                tag.i32(epochs[topic_id][p])
            self.buf += _tag0(tag.buf)

    def bytes_(self, data: bytes) -> None:
        self.buf += encode_uvarint(len(data) + 1) + data

    def end(self, tagged: bytes = b"\x00") -> bytes:
        self.buf += tagged
        return bytes(self.buf)


def encode_key(key: ConsumerRecordKey) -> bytes:
    buf = bytearray(_I16.pack(key.record_type))
    for s in (key.group, key.member_id):
        if s is not None:
            data = s.encode()
            buf += _I16.pack(len(data)) + data
    return bytes(buf)


def encode_consumer_value(record_type: int, value: ConsumerValue) -> bytes:
    w = _Compact()
    if record_type in (GROUP_METADATA, TARGET_ASSIGNMENT_METADATA):
        assert isinstance(value, int)
        w.i32(value)
    elif record_type == MEMBER_METADATA:
        assert isinstance(value, ConsumerGroupMember)
        _member_metadata(w, value)
        if value.classic is not None:
            return w.end(_classic_tag(value.classic))
    elif record_type == TARGET_ASSIGNMENT_MEMBER:
        assert isinstance(value, dict)
        w.assignment(value)
    else:
        assert isinstance(value, CurrentAssignment)
        w.i32(value.member_epoch)
        w.i32(value.previous_member_epoch)
        w.buf += _I8.pack(value.state.value)
        epochs = _materialized(value)
        w.assignment(value.assigned, epochs)
        w.assignment(value.pending_revocation, epochs)
    return w.end()


def _materialized(current: CurrentAssignment) -> dict[uuid.UUID, dict[int, int]]:
    """Every held partition's assignment epoch, the member epoch where none is kept."""
    out: dict[uuid.UUID, dict[int, int]] = {}
    for held in (current.assigned, current.pending_revocation):
        for topic_id, parts in held.items():
            known = current.assignment_epochs.get(topic_id, {})
            out.setdefault(topic_id, {}).update({p: known.get(p, current.member_epoch) for p in parts})
    return out


def _member_metadata(w: _Compact, m: ConsumerGroupMember) -> None:
    for s in (m.instance_id, m.rack_id, m.client_id, m.client_host):
        w.string(s)
    w.length(len(m.subscribed_topic_names))
    for name in m.subscribed_topic_names:
        w.string(name)
    w.string(m.subscribed_topic_regex)
    w.i32(m.rebalance_timeout_ms)
    w.string(m.server_assignor)


def _classic_tag(classic: ClassicMemberMetadata) -> bytes:
    """The value's tagged-field section holding tag 0, ClassicMemberMetadata."""
    w = _Compact(headless=True)
    w.i32(classic.session_timeout_ms)
    w.length(len(classic.supported_protocols))
    for name, metadata in classic.supported_protocols:
        w.string(name)
        w.bytes_(metadata)
        w.buf += b"\x00"
    w.buf += b"\x00"
    return _tag0(w.buf)


def _tag0(body: bytes | bytearray) -> bytes:
    """A tagged-field section holding tag 0 alone."""
    return encode_uvarint(1) + encode_uvarint(0) + encode_uvarint(len(body)) + bytes(body)


def consumer_record(key: ConsumerRecordKey, value: ConsumerValue | None, *, timestamp: int) -> Record:
    data = None if value is None else encode_consumer_value(key.record_type, value)
    return Record(timestamp=timestamp, key=encode_key(key), value=data)


# -- reading ---------------------------------------------------------------------------------


def decode_consumer_key(data: bytes) -> ConsumerRecordKey:
    r = _Reader(data)
    if r.version not in CONSUMER_RECORD_TYPES:
        raise ValueError(f"not a consumer group record key: version {r.version}")
    group = r.string()
    member = r.string() if r.version in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT) \
        else None
    return ConsumerRecordKey(record_type=r.version, group=group, member_id=member)


def _read_assignment(r: _Reader, epochs: dict[uuid.UUID, dict[int, int]] | None = None) -> Assignment:
    """Topics and partitions; each topic's AssignmentEpochs (tag 0) go to `epochs` when given and
    as long as its partitions (Kafka ignores them otherwise)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for _ in range(max(r.array_length(), 0)):
        topic_id = uuid.UUID(bytes=r._take(16))
        parts = [r.i32() for _ in range(max(r.array_length(), 0))]
        out[topic_id] = frozenset(parts)
        tagged = _read_tag0(r)
        if tagged is not None and epochs is not None:
            found = [tagged.i32() for _ in range(max(tagged.array_length(), 0))]
            if len(found) == len(parts):
                epochs.setdefault(topic_id, {}).update(zip(parts, found, strict=True))
    return out


def _read_tag0(r: _Reader) -> _Reader | None:
    """Read a tagged-field section; a reader of tag 0's body (the only tag known here), if there."""
    found = None
    for _ in range(r.uvarint()):
        tag, data = r.uvarint(), r._take(r.uvarint())
        if tag == 0:
            found = _Reader(b"\x00\x00" + data, flexible_from=0)
    return found


def decode_consumer_value(key: ConsumerRecordKey, data: bytes) -> ConsumerValue:
    r = _Reader(data, flexible_from=0)
    value: ConsumerValue
    if key.record_type in (GROUP_METADATA, TARGET_ASSIGNMENT_METADATA):
        value = r.i32()
    elif key.record_type == MEMBER_METADATA:
        return _read_member(r, key.member_id or "")
    elif key.record_type == TARGET_ASSIGNMENT_MEMBER:
        value = _read_assignment(r)
    else:
        epoch, previous = r.i32(), r.i32()
        state_id = r._take(1)[0]
        try:
            state = MemberState(state_id)
        except ValueError:
            state = MemberState.UNKNOWN
        epochs: dict[uuid.UUID, dict[int, int]] = {}
        value = CurrentAssignment(member_epoch=epoch, previous_member_epoch=previous, state=state,
                                  assigned=_read_assignment(r, epochs),
                                  pending_revocation=_read_assignment(r, epochs), assignment_epochs=epochs)
    r.tagged_fields()
    return value


def _read_member(r: _Reader, member_id: str) -> ConsumerGroupMember:
    instance_id, rack_id = r.nullable_string(), r.nullable_string()
    client_id, client_host = r.string(), r.string()
    names = tuple(r.string() for _ in range(max(r.array_length(), 0)))
    regex = r.nullable_string()
    rebalance_timeout = r.i32()
    assignor = r.nullable_string()
    tagged = _read_tag0(r)
    classic = None if tagged is None else _read_classic(tagged)
    return ConsumerGroupMember(member_id=member_id, instance_id=instance_id, rack_id=rack_id,
                               client_id=client_id, client_host=client_host, subscribed_topic_names=names,
                               subscribed_topic_regex=regex, rebalance_timeout_ms=rebalance_timeout,
                               server_assignor=assignor, classic=classic)


def _read_classic(r: _Reader) -> ClassicMemberMetadata:
    session_timeout = r.i32()
    protocols = []
    for _ in range(max(r.array_length(), 0)):
        name, metadata = r.string(), r.bytes_()
        r.tagged_fields()
        protocols.append((name, metadata))
    return ClassicMemberMetadata(session_timeout_ms=session_timeout, supported_protocols=tuple(protocols))


def with_current(member: ConsumerGroupMember, current: CurrentAssignment) -> ConsumerGroupMember:
    return replace(member, member_epoch=current.member_epoch,
                   previous_member_epoch=current.previous_member_epoch, state=current.state,
                   assigned=current.assigned, pending_revocation=current.pending_revocation,
                   assignment_epochs=current.assignment_epochs)
