"""What a consumer group writes to __consumer_offsets after a change, and how it is read back;
plus its ConsumerGroupDescribe view.

changes() diffs the group as a decision left it against the group as it stands and returns only
the records that differ, in Kafka's order (member subscription, group epoch, target assignment,
assignment epoch, current assignment; tombstones for members that left). apply_consumer_record
replays them: after a write (consumer_shard.py) and at start-up (loader.py) alike, so a restarted
broker knows every member, its epoch and its partitions: members resume with their next
heartbeat, within their session timeout (which restarts at load, as in Kafka).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from protocol.records import Record

from .consumer_group import ConsumerGroup, ConsumerGroupState
from .consumer_heartbeat import ConsumerGroupConfig, assignor_name
from .consumer_log import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    ConsumerRecordKey,
    ConsumerValue,
    CurrentAssignment,
    consumer_record,
    with_current,
)
from .consumer_member import Assignment, ConsumerGroupMember

__all__ = ("ConsumerGroupDescription", "ConsumerRecord", "all_tombstones", "apply_consumer_record",
           "changes", "describe_consumer_group", "tombstones")

_SUBSCRIPTION_FIELDS = ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                        "subscribed_topic_regex", "rebalance_timeout_ms", "server_assignor", "classic")


def _current(m: ConsumerGroupMember) -> CurrentAssignment:
    return CurrentAssignment(member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
                             state=m.state, assigned=m.assigned, pending_revocation=m.pending_revocation,
                             assignment_epochs=m.assignment_epochs)


def _subscription(m: ConsumerGroupMember) -> ConsumerGroupMember:
    """The member as its ConsumerGroupMemberMetadata record holds it (no current assignment), so
    replaying the value equals replaying it decoded."""
    fields = {f: getattr(m, f) for f in _SUBSCRIPTION_FIELDS}
    return ConsumerGroupMember(member_id=m.member_id, **fields)


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """One consumer-group record (key and value, None for a tombstone) before it is encoded."""

    key: ConsumerRecordKey
    value: ConsumerValue | None

    def encode(self, timestamp: int) -> Record:
        return consumer_record(self.key, self.value, timestamp=timestamp)


def changes(before: ConsumerGroup, after: ConsumerGroup) -> list[ConsumerRecord]:
    """The records that take the group from `before` to `after`, in Kafka's order (tombstones of
    members gone, then subscriptions, group epoch, targets, assignment epoch, current assignments)."""
    gid = after.group_id
    out: list[ConsumerRecord] = []

    def add(kind: int, value: ConsumerValue | None, member_id: str | None = None) -> None:
        out.append(ConsumerRecord(ConsumerRecordKey(record_type=kind, group=gid, member_id=member_id), value))

    for mid in before.members.keys() - after.members.keys():
        add(CURRENT_MEMBER_ASSIGNMENT, None, mid)
        add(TARGET_ASSIGNMENT_MEMBER, None, mid)
        add(MEMBER_METADATA, None, mid)
    # Members and targets are immutable values, and a decision's copy shares those it left alone:
    # an identity test skips them (a heartbeat changes one member of many).
    changed = [(before.members.get(mid), m) for mid, m in after.members.items() if before.members.get(mid) is not m]
    for old, member in changed:
        if old is None or any(getattr(old, f) != getattr(member, f) for f in _SUBSCRIPTION_FIELDS):
            add(MEMBER_METADATA, _subscription(member), member.member_id)
    if after.group_epoch != before.group_epoch:
        add(GROUP_METADATA, after.group_epoch)
    for mid, target in after.target.items():
        old_target = before.target.get(mid)
        if old_target is not target and old_target != target:
            add(TARGET_ASSIGNMENT_MEMBER, dict(target), mid)
    if after.assignment_epoch != before.assignment_epoch:
        add(TARGET_ASSIGNMENT_METADATA, after.assignment_epoch)
    for old, member in changed:
        if old is None or _current(old) != _current(member):
            add(CURRENT_MEMBER_ASSIGNMENT, _current(member), member.member_id)
    return out


def tombstones(group: ConsumerGroup) -> list[ConsumerRecord]:
    """The records that delete an (empty) consumer group's own records."""
    kinds = (TARGET_ASSIGNMENT_METADATA, GROUP_METADATA)
    return [ConsumerRecord(ConsumerRecordKey(record_type=k, group=group.group_id), None) for k in kinds]


def all_tombstones(group: ConsumerGroup, member_ids: Iterable[str]) -> list[ConsumerRecord]:
    """Tombstones for these members' records and then the group's own (a downgrade's), in
    Kafka's createGroupTombstoneRecords order."""
    out = []
    for mid in dict.fromkeys(member_ids):
        for kind in (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA):
            out.append(ConsumerRecord(ConsumerRecordKey(record_type=kind, group=group.group_id, member_id=mid), None))
    return out + tombstones(group)


def apply_consumer_record(group: ConsumerGroup, key: ConsumerRecordKey, value: ConsumerValue | None) -> None:
    """Replay one record (after its write, and in loader.py); the inverse of changes()."""
    mid = key.member_id or ""
    if key.record_type == GROUP_METADATA:
        group.group_epoch = value if isinstance(value, int) else 0
    elif key.record_type == TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = value if isinstance(value, int) else 0
    elif key.record_type == TARGET_ASSIGNMENT_MEMBER:
        if isinstance(value, dict):
            group.target[mid] = value
        else:
            group.target.pop(mid, None)
    elif key.record_type == MEMBER_METADATA:
        if isinstance(value, ConsumerGroupMember):
            old = group.members.get(mid)
            group.put_member(value if old is None else with_current(value, _current(old)))
        else:
            group.remove_member(mid)
    elif key.record_type == CURRENT_MEMBER_ASSIGNMENT and isinstance(value, CurrentAssignment):
        old = group.members.get(mid)
        group.put_member(with_current(old or ConsumerGroupMember(member_id=mid), value))


# -- ConsumerGroupDescribe -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberDescription:
    member: ConsumerGroupMember
    target: Mapping[str, tuple[uuid.UUID, frozenset[int]]]
    assigned: Mapping[str, tuple[uuid.UUID, frozenset[int]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescription:
    group_id: str
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[MemberDescription, ...] = field(default=())


def _named(a: Assignment, names: Mapping[uuid.UUID, str]) -> dict[str, tuple[uuid.UUID, frozenset[int]]]:
    return {names[t]: (t, ps) for t, ps in sorted(a.items()) if t in names}


def describe_consumer_group(
    group: ConsumerGroup, cfg: ConsumerGroupConfig, names: Mapping[uuid.UUID, str]
) -> ConsumerGroupDescription:
    state = group.state
    return ConsumerGroupDescription(
        group_id=group.group_id,
        state=str(state if state is not ConsumerGroupState.DEAD else ""),
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=assignor_name(group, cfg),
        members=tuple(
            MemberDescription(member=m, assigned=_named(m.assigned, names),
                              target=_named(group.target.get(mid, {}), names))
            for mid, m in group.members.items()
        ),
    )
