"""Which broker should lead each partition (docs/cluster.md, "Balance"): pure, so that every broker
computing it from the same snapshot agrees, and testable without a database.

Each live broker gets at most ceil(partitions / brokers) of every topic's partitions (internal
topics too: their partitions are the coordinator shards). A partition stays with its live leader
while that leader is within the topic's share (moving leadership costs a short unavailability and
a rebuild of producer state); the rest go to the least loaded broker still below the topic's
share, the lowest node id on ties. Then, where topic shares allow, partitions move from the most
to the least loaded broker until totals differ by at most one, so many one-partition topics
spread too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from storage.api import PartitionLease, TopicPartition

__all__ = ("Moves", "assign", "plan")


def assign(brokers: Sequence[int], partitions: Sequence[PartitionLease]) -> dict[TopicPartition, int]:
    """The target leader of every partition; {} without a live broker."""
    if not brokers:
        return {}
    shares = _Shares(sorted(set(brokers)), partitions)
    ordered = sorted(partitions, key=lambda p: p.tp)
    for p in ordered:  # sticky: a live leader within the topic's share keeps its partition
        if p.leader in shares.live and shares.below(p.leader, p.tp.topic):
            shares.give(p.tp, p.leader)
    for p in ordered:
        if p.tp not in shares.target:
            shares.give(p.tp, min(shares.live, key=lambda b: (not shares.below(b, p.tp.topic), shares.total[b], b)))
    shares.even_out()
    return shares.target


class _Shares:
    """Counts per broker while assign() fills the target."""

    def __init__(self, live: list[int], partitions: Sequence[PartitionLease]) -> None:
        self.live = live
        self.share = {t: math.ceil(n / len(live)) for t, n in Counter(p.tp.topic for p in partitions).items()}
        self.in_topic: Counter[tuple[int, str]] = Counter()
        self.total: Counter[int] = Counter()
        self.target: dict[TopicPartition, int] = {}

    def below(self, broker: int, topic: str) -> bool:
        return self.in_topic[broker, topic] < self.share[topic]

    def give(self, tp: TopicPartition, broker: int) -> None:
        old = self.target.get(tp)
        if old is not None:
            self.in_topic[old, tp.topic] -= 1
            self.total[old] -= 1
        self.target[tp] = broker
        self.in_topic[broker, tp.topic] += 1
        self.total[broker] += 1

    def even_out(self) -> None:
        """Move partitions from the most to the least loaded brokers (within topic shares) until
        totals differ by at most one: many small topics spread too, with few moves."""
        while True:
            by_load = sorted(self.live, key=lambda b: (self.total[b], b))
            low, high = by_load[0], by_load[-1]
            if self.total[high] - self.total[low] <= 1:
                return
            movable = sorted(tp for tp, b in self.target.items() if b == high and self.below(low, tp.topic))
            if not movable:
                return
            self.give(movable[0], low)


@dataclass(frozen=True, slots=True)
class Moves:
    take: list[TopicPartition]  # free (or lapsed, or ours from an earlier incarnation) and ours to lead
    release: list[TopicPartition]  # led here, meant for another live broker
    lost: list[TopicPartition]  # led here by our account, but the database says otherwise (or gone)
    # Rows naming us at this epoch that we do not serve (a lapse dropped them, or an earlier
    # incarnation left them), meant for another live broker: only we can free them.
    disown: list[tuple[TopicPartition, int]] = field(default_factory=list)


def plan(me: int, held: Mapping[TopicPartition, int], brokers: Sequence[int],
         partitions: Sequence[PartitionLease]) -> Moves:
    """What this broker should do, given what it leads (partition -> epoch) and a snapshot.

    A partition the snapshot shows led by a live other broker is never taken: its leader releases
    it first. A partition the snapshot shows with another leader or another epoch than ours, or
    no longer shows (its topic was deleted), was lost: stop serving it, release nothing.

    The target is computed from the snapshot as it is, so every broker agrees on it: rows naming
    us count as ours even when we no longer serve them (the others see them so, and never take
    a row of a live broker). We take them back at a new epoch, or free the ones meant for another
    broker; had we read them as free, our target could give one to a broker that waits for us to
    release it, and the partition would stay without a leader."""
    rows = {p.tp: p for p in partitions}
    target = assign(brokers, partitions)
    lost = [tp for tp, epoch in held.items()
            if tp not in rows or rows[tp].leader != me or rows[tp].leader_epoch != epoch]
    take = [p.tp for p in partitions if target.get(p.tp) == me and p.tp not in held and p.leader in (-1, me)]
    release = [tp for tp in held if tp not in lost and target.get(tp, me) != me]
    disown = [(p.tp, p.leader_epoch) for p in partitions
              if p.leader == me and p.tp not in held and target.get(p.tp, me) != me]
    return Moves(take=take, release=release, lost=lost, disown=disown)
