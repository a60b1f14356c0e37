"""ConsumerGroupMember and its reconciliation towards the target assignment (KIP-848).

Kafka's ConsumerGroupMember and CurrentAssignmentBuilder. A member moves towards the group's
target assignment one safe step at a time (incremental cooperative rebalancing on the server):

- STABLE: the member owns its target; when a newer target epoch appears it is reconciled.
- UNREVOKED_PARTITIONS: the member must first give up partitions it has but may no longer have;
  its epoch stays until its heartbeat's owned partitions no longer include any of them.
- UNRELEASED_PARTITIONS: the member is at the target epoch but some of its target partitions are
  still owned (or being revoked) by another member; they are handed over once released.

A partition is only ever assigned to one member at a time: the group's partition epochs record
who holds each one, and a partition held by another member is never handed out (Kafka's
currentPartitionEpoch). Each partition a member holds (assigned or pending revocation) also keeps
the member epoch at which it was assigned (KIP-1251, Kafka 4.3+): an offset commit of an older
member epoch is accepted for the partitions the member has held since then. Members are
immutable values; every change is a dataclasses.replace, so "did the member change" is an
equality test, as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

__all__ = (
    "Assignment",
    "AssignmentEpochs",
    "ClassicMemberMetadata",
    "ConsumerGroupMember",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "MemberState",
    "reconcile",
)

# topic id -> partitions, Kafka's Map<Uuid, Set<Integer>>
Assignment = Mapping[uuid.UUID, frozenset[int]]
# topic id -> partition -> the member epoch it was assigned at (KIP-1251's assignment epochs)
AssignmentEpochs = Mapping[uuid.UUID, Mapping[int, int]]
# The member epochs a ConsumerGroupHeartbeat uses to leave (Kafka's ConsumerGroupHeartbeatRequest).
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(Enum):
    # Values are Kafka's MemberState ids (the CurrentMemberAssignment record's State field).
    UNREVOKED_PARTITIONS = 0
    UNRELEASED_PARTITIONS = 1
    STABLE = 2
    UNKNOWN = 127


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicMemberMetadata:
    """What a member speaking the classic protocol inside a consumer group joined with (Kafka's
    ConsumerGroupMemberMetadataValue.ClassicMemberMetadata): its session timeout and its
    (assignor name, ConsumerProtocolSubscription bytes) list, the first being its preferred."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # Of the partitions in assigned and pending_revocation; one without an entry counts as assigned
    # at the member's current epoch, as Kafka reads a record written before KIP-1251.
    assignment_epochs: AssignmentEpochs = field(default_factory=dict)
    # Set for a member that joined with JoinGroup (KIP-848 migration), None for a
    # ConsumerGroupHeartbeat member.
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch the member holds the partition since (assigned or pending revocation), None
        if it holds it not (Kafka's assignmentEpoch, then pendingRevocationEpoch)."""
        if partition not in self.assigned.get(topic_id, ()) and \
                partition not in self.pending_revocation.get(topic_id, ()):
            return None
        return self.assignment_epochs.get(topic_id, {}).get(partition, self.member_epoch)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the member's reported partitions include any of these (unknown: assume so)."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in partitions.items())


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    partition_owner_epoch: Callable[[uuid.UUID, int], int],
    owned: Assignment | None,
) -> ConsumerGroupMember:
    """The member's next step towards `target` (Kafka's CurrentAssignmentBuilder.build).
    partition_owner_epoch(t, p) is -1 for a free partition, else its holder's epoch (the
    caller answers -1 for partitions this member holds itself). owned: the partitions the
    heartbeat reported, None if it did not send them."""
    match member.state:
        case MemberState.STABLE:
            if member.member_epoch == target_epoch:
                return member
            return _next(member, member.member_epoch, target_epoch, target, partition_owner_epoch, owned)
        case MemberState.UNREVOKED_PARTITIONS:
            if _owns_any(owned, member.pending_revocation):
                return member
            return _next(member, member.member_epoch + 1, target_epoch, target, partition_owner_epoch, owned)
        case MemberState.UNRELEASED_PARTITIONS:
            return _next(member, member.member_epoch, target_epoch, target, partition_owner_epoch, owned)
        case MemberState.UNKNOWN:
            if owned is None or any(owned.values()):
                raise KafkaError(ErrorCode.fenced_member_epoch, "The consumer group member is in an "
                                 "unknown state. The member must abandon all its partitions and rejoin.")
            return _next(member, target_epoch, target_epoch, target, partition_owner_epoch, owned)


def _next(
    member: ConsumerGroupMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_owner_epoch: Callable[[uuid.UUID, int], int],
    owned: Assignment | None,
) -> ConsumerGroupMember:
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    add: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        had = member.assigned.get(topic_id, frozenset())
        kept, gone, new = had & wanted, had - wanted, wanted - had
        free = frozenset(p for p in new if partition_owner_epoch(topic_id, p) == -1)
        unreleased |= free != new
        for out, value in ((keep, kept), (revoke, gone), (add, free)):
            if value:
                out[topic_id] = value
    if revoke and _owns_any(owned, revoke):
        # Revocation first: the member keeps its epoch until it reports the partitions gone.
        return replace(member.with_epoch(epoch) if epoch != member.member_epoch else member,
                       state=MemberState.UNREVOKED_PARTITIONS, assigned=keep, pending_revocation=revoke,
                       assignment_epochs=_held_since(member, (keep, revoke), {}, epoch))
    for topic_id, parts in add.items():
        keep[topic_id] = keep.get(topic_id, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    moved = member.with_epoch(target_epoch) if target_epoch != member.member_epoch else member
    return replace(moved, state=state, assigned=keep, pending_revocation={},
                   assignment_epochs=_held_since(member, (keep,), add, target_epoch))


def _held_since(member: ConsumerGroupMember, held: tuple[Assignment, ...], added: Assignment,
                epoch: int) -> dict[uuid.UUID, dict[int, int]]:
    """The assignment epochs after a step: a partition the member kept keeps its own, one it is
    given now gets the epoch it is given at."""
    out: dict[uuid.UUID, dict[int, int]] = {}
    for assignment in held:
        for topic_id, parts in assignment.items():
            for p in parts:
                new = p in added.get(topic_id, ())
                since = epoch if new else member.assignment_epoch(topic_id, p)
                out.setdefault(topic_id, {})[p] = member.member_epoch if since is None else since
    return out
