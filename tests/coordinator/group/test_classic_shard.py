"""classic_shard.py's decisions share the live group's member objects until they change one
(copy on write), so a JoinGroup to a large group does not copy every member."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from coordinator.group import classic_shard as classic
from coordinator.group.state import GroupState

from .helpers import params, stable_group, subscription


def test_a_decision_copies_only_the_members_it_changes() -> None:
    group, ids = stable_group("a", "b", "c")
    follower = ids[1]
    live = dict(group.members)
    rejoin = params(follower, client_id="b", protocols=(("range", subscription("t", "u")),))
    result = classic.join(group, rejoin, 0, "w")
    assert result.decided is not None and result.decided.state is GroupState.PREPARING_REBALANCE
    assert result.decided.members[follower] is not live[follower]  # it rejoined: its own copy
    assert all(result.decided.members[m] is live[m] for m in ids if m != follower)
    assert group.state is GroupState.STABLE and group.members == live
    assert all(m.join_waiter is None for m in group.members.values())


def test_a_heartbeat_decides_without_a_copy() -> None:
    group, (leader, _) = stable_group("a", "b")
    result = classic.heartbeat(group, leader, group.generation_id, None)
    assert result.response is ErrorCode.none and result.decided is None and result.records == ()
