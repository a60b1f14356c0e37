"""The share group assignor ("simple", Kafka's only share group assignor).

Share group members never own a partition alone: records, not partitions, are handed out, so a
partition may be fetched by several members and moving one needs no revocation. The assignor
spreads partitions evenly: each partition goes to one subscribed member, the one with the fewest
so far, keeping its current member while that one is not over its share (sticky, so that sessions
and locks stay where they are); then a member left with nothing (more members than partitions)
shares the partition of its topics that has the fewest members. Every member subscribed to an
existing topic therefore fetches something, as KIP-932 wants.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

__all__ = ("ASSIGNOR_NAME", "Assignment", "assign")

ASSIGNOR_NAME: Final = "simple"

# topic id -> partitions
Assignment = dict[uuid.UUID, frozenset[int]]


def assign(subscriptions: Mapping[str, frozenset[uuid.UUID]], partition_counts: Mapping[uuid.UUID, int],
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """The target assignment of every member: subscriptions are topic ids per member,
    partition_counts the existing subscribed topics, current the members' assignments now."""
    members = sorted(subscriptions)
    targets = [(t, p) for t in sorted(partition_counts) for p in range(partition_counts[t])]
    owners: dict[tuple[uuid.UUID, int], list[str]] = {tp: [] for tp in targets}
    load = dict.fromkeys(members, 0)
    eligible = {tp: [m for m in members if tp[0] in subscriptions[m]] for tp in targets}
    fair = -(-len(targets) // max(1, len(members)))  # ceil: nobody keeps more than this
    for tp in targets:
        keepers = [m for m in eligible[tp] if tp[1] in current.get(m, {}).get(tp[0], ()) and load[m] < fair]
        candidates = keepers or eligible[tp]
        if candidates:
            chosen = min(candidates, key=lambda m: (load[m], m))
            owners[tp].append(chosen)
            load[chosen] += 1
    for member in members:
        if load[member] == 0:
            shared = [tp for tp in targets if tp[0] in subscriptions[member]]
            if shared:
                tp = min(shared, key=lambda tp: (len(owners[tp]), tp))
                owners[tp].append(member)
                load[member] += 1
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for (topic_id, partition), assigned in owners.items():
        for member in assigned:
            out[member].setdefault(topic_id, set()).add(partition)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}
