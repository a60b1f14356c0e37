"""ConsumerGroup: one group of the consumer protocol (KIP-848), as a synchronous state object.

Kafka's ConsumerGroup (group-coordinator/.../modern/consumer). Three epochs drive it:
- the group epoch, bumped whenever membership, subscriptions or the subscribed topics'
  partitions change;
- the assignment epoch, the group epoch the target assignment was last computed for;
- each member's epoch, the target epoch it has reconciled to (consumer_member.py).
The state is derived from them, never stored: Empty without members, Assigning while the target
lags the group epoch, Reconciling while a member lags the target, else Stable.

The heartbeat protocol that moves these lives in consumer_heartbeat.py; this module holds the
data and its invariants (the partition epochs: who holds each partition right now).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from .consumer_member import Assignment, ConsumerGroupMember, MemberState
from .state import WireNamedState

__all__ = ("ConsumerGroup", "ConsumerGroupState")


class ConsumerGroupState(WireNamedState):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        # (topic id, partition) -> epoch of the member holding it (assigned or being revoked).
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        # topic name -> (topic id, partition count) of every topic some member subscribes to;
        # a change (new topic, more partitions) bumps the group epoch.
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.session_deadlines: dict[str, int] = {}
        # member id -> (deadline, member epoch it was set for): revocation must finish by then.
        self.rebalance_deadlines: dict[str, tuple[int, int]] = {}
        # member id -> deadline of a classic member's join (told to rejoin) or sync (joined):
        # Kafka's consumer-group join and sync timeouts, both its rebalance timeout long.
        self.classic_deadlines: dict[str, int] = {}

    # -- queries ---------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        for member in self.members.values():
            if member.instance_id == instance_id:
                return member
        return None

    def owner_epoch(self, member_id: str) -> OwnerEpoch:
        return OwnerEpoch(self, member_id)

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(self.subscription_metadata)

    def next_deadline_ms(self) -> int | None:
        deadlines = list(self.session_deadlines.values())
        deadlines.extend(d for d, _ in self.rebalance_deadlines.values())
        deadlines.extend(self.classic_deadlines.values())
        return min(deadlines, default=None)

    def iter_assigned(self) -> Iterator[tuple[str, Assignment]]:
        for member_id, member in self.members.items():
            yield member_id, member.assigned

    # -- changes -----------------------------------------------------------------------------------

    def put_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member, moving its partition epochs with it."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        if member.state is not MemberState.UNKNOWN:
            for assignment in (member.assigned, member.pending_revocation):
                for topic_id, parts in assignment.items():
                    for p in parts:
                        self.partition_epochs[(topic_id, p)] = member.member_epoch

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._release(member)
        self.target.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        self.rebalance_deadlines.pop(member_id, None)
        self.classic_deadlines.pop(member_id, None)
        return member

    def _release(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, parts in assignment.items():
                for p in parts:
                    self.partition_epochs.pop((topic_id, p), None)

    def copy(self) -> ConsumerGroup:
        """A copy to decide a change on (members are immutable values: shallow copies suffice)."""
        out = ConsumerGroup(self.group_id)
        out.group_epoch, out.assignment_epoch = self.group_epoch, self.assignment_epoch
        out.members, out.target = dict(self.members), dict(self.target)
        out.partition_epochs, out.subscription_metadata = dict(self.partition_epochs), dict(self.subscription_metadata)
        out.session_deadlines, out.rebalance_deadlines = dict(self.session_deadlines), dict(self.rebalance_deadlines)
        out.classic_deadlines = dict(self.classic_deadlines)
        return out

    def all_classic_except(self, member_ids: set[str]) -> bool:
        """Kafka's allMembersUseClassicProtocolExcept: whether only classic members remain
        once these are gone (and some remain)."""
        rest = [m for mid, m in self.members.items() if mid not in member_ids]
        return bool(rest) and all(m.uses_classic_protocol for m in rest)

    def waiting_on_unreleased(self, member: ConsumerGroupMember) -> bool:
        """Kafka's waitingOnUnreleasedPartition: some target partition the member lacks is still
        held by another member."""
        owner = self.owner_epoch(member.member_id)
        for topic_id, parts in self.target.get(member.member_id, {}).items():
            mine = member.assigned.get(topic_id, frozenset())
            if any(owner(topic_id, p) != -1 for p in parts - mine):
                return True
        return False


class OwnerEpoch:
    """Kafka's currentPartitionEpoch as seen by one member: -1 when the partition is free or
    already the member's own, else the holder's epoch."""

    __slots__ = ("_group", "_member_id")

    def __init__(self, group: ConsumerGroup, member_id: str) -> None:
        self._group, self._member_id = group, member_id

    def __call__(self, topic_id: uuid.UUID, partition: int) -> int:
        epoch = self._group.partition_epochs.get((topic_id, partition))
        if epoch is None:
            return -1
        mine = self._group.members.get(self._member_id)
        if mine is not None and (
            partition in mine.assigned.get(topic_id, frozenset())
            or partition in mine.pending_revocation.get(topic_id, frozenset())
        ):
            return -1
        return epoch
