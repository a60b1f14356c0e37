"""The classic consumer group's state machine, as a table (Kafka's GroupState / ClassicGroupState).

Rules, copied from Kafka's GroupMetadata.scala:

- EMPTY: no members; offsets may remain. A join moves it to PREPARING_REBALANCE. When its offsets
  expire (or the group is deleted) it becomes DEAD.
- PREPARING_REBALANCE: waiting for every known member to (re)join, bounded by the rebalance timeout.
  Joins are parked; heartbeats answer REBALANCE_IN_PROGRESS.
- COMPLETING_REBALANCE: every member has its JoinGroup response for the new generation; waiting for
  the leader's SyncGroup with the assignment. Syncs of followers are parked.
- STABLE: the leader's assignment is persisted and handed out.
- DEAD: the group has no members and no metadata and is about to be removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

__all__ = ("GroupState", "VALID_PREVIOUS_STATES", "IllegalStateTransition", "WireNamedState", "transition_to")


class WireNamedState(Enum):
    """A group state whose value is the name DescribeGroups, ConsumerGroupDescribe and ListGroups
    put on the wire; str() gives it."""

    def __str__(self) -> str:
        return str(self.value)


class GroupState(WireNamedState):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState

VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset(
        {_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}
    ),
}


class IllegalStateTransition(RuntimeError):
    """A move the table forbids: a bug in the coordinator, never a client error."""


def can_transition(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def transition_to(current: GroupState, target: GroupState, group_id: str = "") -> GroupState:
    """Return target if the table allows current -> target, else raise IllegalStateTransition."""
    if not can_transition(current, target):
        raise IllegalStateTransition(
            f"group {group_id!r} should be in one of "
            f"{sorted(s.value for s in VALID_PREVIOUS_STATES[target])} before moving to "
            f"{target.value}, but is {current.value}"
        )
    return target
