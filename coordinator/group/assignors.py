"""Server-side assignors of the consumer group protocol (KIP-848): `uniform` and `range`.

Kafka's group-coordinator module names them UniformAssignor and RangeAssignor and picks one per
group from the members' ServerAssignor (else the first of group.consumer.assignors). Both are
pure functions here: members' subscriptions and the previous target assignment in, the next
target assignment out. Partitions are named by topic id, as on the wire.

- uniform: every partition goes to one of the members subscribed to its topic, balanced so that
  member counts differ by at most one where subscriptions allow, and sticky: a partition stays
  with its previous owner while that owner is under its share. Kafka's version is the same idea
  (OptimizedUniformAssignmentBuilder for identical subscriptions, GeneralUniformAssignmentBuilder
  otherwise); with different subscriptions ours balances greedily (least-loaded subscriber first)
  rather than by Kafka's exact heuristic, so the two can pick different, equally valid owners.
- range: per topic, the subscribers get contiguous ranges in Kafka's member order (static
  members first, by group.instance.id, then the others by member id), the first
  (partitions % members) one extra, so co-partitioned topics line up member by member. As in
  Kafka 4.x's server-side RangeAssignor it keeps no memory of the previous assignment: the ranges
  follow from that order alone, so stickiness comes from group.instance.id (a restarted static
  member sorts where it was and gets its ranges back; a dynamic member's new id may reshuffle).
  Kafka's rack-aware placement needs partition racks, which a single node does not have.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final, Protocol

__all__ = (
    "ASSIGNORS",
    "Assignor",
    "GroupSpec",
    "MemberSubscription",
    "RangeAssignor",
    "TargetAssignment",
    "TopicPartitionIds",
    "UniformAssignor",
)

# topic id -> partition indexes
TopicPartitionIds = Mapping[uuid.UUID, frozenset[int]]
# member id -> its partitions
TargetAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberSubscription:
    member_id: str
    topic_ids: frozenset[uuid.UUID]
    instance_id: str | None = None  # group.instance.id of a static member (range orders by it)
    # The member's partitions in the previous target assignment (stickiness).
    current: TopicPartitionIds = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSpec:
    members: tuple[MemberSubscription, ...]
    # Partition count of every subscribed topic that exists.
    partitions: Mapping[uuid.UUID, int]


class Assignor(Protocol):
    @property
    def name(self) -> str: ...

    def assign(self, spec: GroupSpec) -> TargetAssignment: ...


def _empty(spec: GroupSpec) -> dict[str, dict[uuid.UUID, set[int]]]:
    return {m.member_id: {} for m in spec.members}


def _freeze(out: Mapping[str, Mapping[uuid.UUID, Set[int]]]) -> TargetAssignment:
    return {mid: {t: frozenset(ps) for t, ps in topics.items() if ps} for mid, topics in out.items()}


class UniformAssignor:
    name: Final = "uniform"

    def assign(self, spec: GroupSpec) -> TargetAssignment:
        out = _empty(spec)
        subscribers = _subscribers(spec)
        counts = dict.fromkeys(out, 0)
        kept = _sticky(spec, subscribers, out, counts)
        # Then every free partition to its least-loaded subscriber (ties: member id order).
        for topic_id in sorted(subscribers):
            members = subscribers[topic_id]
            for p in range(spec.partitions[topic_id]):
                if (topic_id, p) in kept:
                    continue
                owner = min(members, key=lambda mid: (counts[mid], mid))
                out[owner].setdefault(topic_id, set()).add(p)
                counts[owner] += 1
        return _freeze(out)


def _sticky(
    spec: GroupSpec,
    subscribers: Mapping[uuid.UUID, list[str]],
    out: dict[str, dict[uuid.UUID, set[int]]],
    counts: dict[str, int],
) -> set[tuple[uuid.UUID, int]]:
    """Keep each member's previous partitions up to its fair share rounded down, then let members
    keep one more while partitions are left over for someone to hold one above the floor: with
    identical subscriptions the counts then differ by at most one and no more moves than needed."""
    shares = _shares(spec, subscribers)
    floors = {mid: int(share) for mid, share in shares.items()}
    extra = sum(spec.partitions[t] for t in subscribers) - sum(floors.values())
    previous = {m.member_id: [(t, p) for t, ps in sorted(m.current.items()) for p in sorted(ps)
                              if t in m.topic_ids and p < spec.partitions.get(t, 0)] for m in spec.members}
    kept: set[tuple[uuid.UUID, int]] = set()

    def keep(mid: str, tp: tuple[uuid.UUID, int]) -> None:
        out[mid].setdefault(tp[0], set()).add(tp[1])
        counts[mid] += 1
        kept.add(tp)

    for mid in sorted(previous):
        for tp in previous[mid][: floors[mid]]:
            keep(mid, tp)
    for mid in sorted(previous):
        rest = previous[mid][floors[mid]:]
        if rest and extra > 0 and counts[mid] < shares[mid]:
            keep(mid, rest[0])
            extra -= 1
    return kept


def _subscribers(spec: GroupSpec) -> dict[uuid.UUID, list[str]]:
    out: dict[uuid.UUID, list[str]] = {}
    for m in spec.members:
        for topic_id in m.topic_ids:
            if topic_id in spec.partitions:
                out.setdefault(topic_id, []).append(m.member_id)
    return {t: sorted(ms) for t, ms in out.items()}


def _range_order(m: MemberSubscription) -> tuple[int, str]:
    """Kafka's RangeAssignor.sortMemberIds: static members first, by instance id, then the rest
    by member id (a member id and an instance id never compare with each other)."""
    return (0, m.instance_id) if m.instance_id is not None else (1, m.member_id)


def _shares(spec: GroupSpec, subscribers: Mapping[uuid.UUID, list[str]]) -> dict[str, Fraction]:
    """Each member's fair share of the partitions it can receive (exact: a float 4/3 * 3 is not 4)."""
    shares: dict[str, Fraction] = dict.fromkeys((m.member_id for m in spec.members), Fraction(0))
    for topic_id, members in subscribers.items():
        for mid in members:
            shares[mid] += Fraction(spec.partitions[topic_id], len(members))
    return shares


class RangeAssignor:
    name: Final = "range"

    def assign(self, spec: GroupSpec) -> TargetAssignment:
        out = _empty(spec)
        ordered = sorted(spec.members, key=_range_order)
        for topic_id in _subscribers(spec):
            members = [m.member_id for m in ordered if topic_id in m.topic_ids]
            count = spec.partitions[topic_id]
            per, extra = divmod(count, len(members))
            start = 0
            for i, mid in enumerate(members):
                size = per + (1 if i < extra else 0)
                if size:
                    out[mid][topic_id] = set(range(start, start + size))
                start += size
        return _freeze(out)


# By name, in Kafka's default group.consumer.assignors order (the first is the default).
ASSIGNORS: Final[Mapping[str, Assignor]] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
