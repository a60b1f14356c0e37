"""The classic protocol's join/sync/heartbeat/leave rules, driven with explicit time."""

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.config import GroupConfig
from coordinator.group.member import SyncParams
from coordinator.group.state import GroupState
from protocol.errors import KafkaError

from .helpers import (
    REBALANCE,
    SESSION,
    join_result,
    new_group,
    params,
    rebalanced_pair,
    replies,
    stable_group,
    subscription,
    sync_result,
)

S = GroupState


def heartbeat_error(group, member_id, generation, now=0, instance=None) -> ErrorCode:
    try:
        group.heartbeat(member_id, generation, instance, now)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.none


# -- join ------------------------------------------------------------------------------------


def test_first_join_v4_gets_member_id_required_then_joins_with_it() -> None:
    group = new_group()
    first = join_result(group.join(params(require_known=True), 0, "w1"), "w1")
    assert first.error is ErrorCode.member_id_required
    assert first.member_id == "c-1"
    assert group.state is S.EMPTY and group.pending_members == {"c-1": SESSION}
    result = join_result(group.join(params("c-1", require_known=True), 5, "w2"), "w2")
    assert result.error is ErrorCode.none
    assert (result.member_id, result.generation_id, result.leader_id) == ("c-1", 1, "c-1")
    assert result.protocol_name == "range" and result.protocol_type == "consumer"
    assert [m.member_id for m in result.members] == ["c-1"]
    assert group.state is S.COMPLETING_REBALANCE and not group.pending_members


def test_join_before_v4_assigns_the_id_and_parks() -> None:
    group = new_group()
    result = join_result(group.join(params(), 0, "w"), "w")
    assert result.error is ErrorCode.none and result.member_id == "c-1"


def test_second_member_triggers_rebalance_and_generation_bump() -> None:
    group, (leader,) = stable_group("a")
    gen = group.generation_id
    out = group.join(params(client_id="b"), 10, "wb")
    assert out.replies == [] and group.state is S.PREPARING_REBALANCE
    assert heartbeat_error(group, leader, gen) is ErrorCode.rebalance_in_progress
    out = group.join(params(leader, client_id="a"), 20, "wa")
    results = replies(out)
    assert {r.generation_id for r in results.values()} == {gen + 1}
    assert [m.member_id for m in results["wa"].members] == [leader, "b-2"]
    assert results["wb"].members == () and results["wb"].leader_id == leader
    # The follower's sync waits for the leader's, which hands out the assignment.
    assert group.sync(SyncParams(member_id="b-2", generation_id=gen + 1), now_ms=21, waiter="sb").replies == []
    out = group.sync(SyncParams(member_id=leader, generation_id=gen + 1, assignments={leader: b"A", "b-2": b"B"}),
                     now_ms=22, waiter="sa")
    assert out.store_group
    assert sync_result(out, "sa").assignment == b"A" and sync_result(out, "sb").assignment == b"B"
    assert group.state is S.STABLE


def test_leader_assignment_missing_members_get_empty_assignment() -> None:
    group, (leader, other) = rebalanced_pair()
    gen = group.generation_id
    group.sync(SyncParams(member_id=other, generation_id=gen), now_ms=0, waiter="sb")
    out = group.sync(SyncParams(member_id=leader, generation_id=gen, assignments={leader: b"x"}), now_ms=0, waiter="sa")
    assert sync_result(out, "sb").assignment == b""


def test_issue_9_second_sync_while_parked_answers_the_first() -> None:
    # Found by the group state machine: the first waiter was dropped, so its request hung.
    group, (leader, other) = rebalanced_pair()
    gen = group.generation_id
    group.sync(SyncParams(member_id=other, generation_id=gen), now_ms=0, waiter="sb1")
    out = group.sync(SyncParams(member_id=other, generation_id=gen), now_ms=0, waiter="sb2")
    assert sync_result(out, "sb1").error is ErrorCode.rebalance_in_progress
    out = group.sync(SyncParams(member_id=leader, generation_id=gen, assignments={other: b"x"}), now_ms=0, waiter="sa")
    assert sync_result(out, "sb2").assignment == b"x"


def test_protocol_chosen_by_vote_among_common_protocols() -> None:
    group = new_group(GroupConfig(initial_rebalance_delay_ms=100))
    sub = subscription("t")
    group.join(params(client_id="a", protocols=[("range", sub), ("roundrobin", sub)]), 0, "a")
    group.join(params(client_id="b", protocols=[("roundrobin", sub), ("range", sub)]), 0, "b")
    group.join(
        params(client_id="c", protocols=[("sticky", sub), ("roundrobin", sub), ("range", sub)]),
        0,
        "c",
    )
    assert group.tick(100).replies == []  # members arrived during the delay: one more
    results = replies(group.tick(200))
    assert {r.protocol_name for r in results.values()} == {"roundrobin"}


@pytest.mark.parametrize(
    "bad",
    [
        params(protocols=[("sticky", b"")]),
        params(protocol_type="connect"),
    ],
)
def test_inconsistent_group_protocol(bad) -> None:
    group, _ = stable_group("a")
    result = join_result(group.join(bad, 0, "w"), "w")
    assert result.error is ErrorCode.inconsistent_group_protocol
    assert group.state is S.STABLE and len(group.members) == 1


def test_empty_group_needs_a_protocol() -> None:
    group = new_group()
    result = join_result(group.join(params(protocols=[]), 0, "w"), "w")
    assert result.error is ErrorCode.inconsistent_group_protocol
    assert group.state is S.EMPTY and not group.members


@pytest.mark.parametrize("session", [5_999, 1_800_001])
def test_invalid_session_timeout(session: int) -> None:
    group = new_group()
    result = join_result(group.join(params(session=session), 0, "w"), "w")
    assert result.error is ErrorCode.invalid_session_timeout


def test_join_with_unknown_member_id() -> None:
    group, _ = stable_group("a")
    result = join_result(group.join(params("nobody"), 0, "w"), "w")
    assert result.error is ErrorCode.unknown_member_id


def test_follower_rejoin_with_same_metadata_in_stable_gets_current_generation() -> None:
    group, (leader, follower) = stable_group("a", "b")
    result = join_result(group.join(params(follower, client_id="b"), 0, "w"), "w")
    assert result.generation_id == group.generation_id and result.members == ()
    assert group.state is S.STABLE


def test_leader_rejoin_in_stable_forces_rebalance() -> None:
    group, (leader, _follower) = stable_group("a", "b")
    assert group.join(params(leader, client_id="a"), 0, "w").replies == []
    assert group.state is S.PREPARING_REBALANCE


def test_changed_metadata_forces_rebalance() -> None:
    group, (_leader, follower) = stable_group("a", "b")
    group.join(
        params(follower, client_id="b", protocols=[("range", subscription("t", "u"))]), 0, "w"
    )
    assert group.state is S.PREPARING_REBALANCE


def test_retried_join_in_completing_rebalance_is_answered_again() -> None:
    group, (leader, follower) = rebalanced_pair()
    assert group.state is S.COMPLETING_REBALANCE
    again = join_result(group.join(params(leader, client_id="a"), 1, "wa2"), "wa2")
    assert again.generation_id == group.generation_id and len(again.members) == 2


def test_group_max_size() -> None:
    group, _ = stable_group("a", config=GroupConfig(initial_rebalance_delay_ms=0, max_size=1))
    result = join_result(group.join(params(client_id="b"), 0, "w"), "w")
    assert result.error is ErrorCode.group_max_size_reached


def test_second_join_while_parked_answers_the_first() -> None:
    group, (leader, follower) = stable_group("a", "b")
    group.join(params(leader, client_id="a"), 0, "w1")
    out = group.join(params(leader, client_id="a"), 0, "w2")
    assert join_result(out, "w1").error is ErrorCode.rebalance_in_progress
    result = join_result(group.join(params(follower, client_id="b"), 0, "wb"), "w2")
    assert result.error is ErrorCode.none


# -- initial rebalance delay -------------------------------------------------------------------


def test_initial_delay_waits_and_extends_while_members_arrive() -> None:
    group = new_group(GroupConfig(initial_rebalance_delay_ms=3_000))
    group.join(params(client_id="a", rebalance=10_000), 0, "a")
    assert group.state is S.PREPARING_REBALANCE and group.next_deadline_ms() == 3_000
    group.join(params(client_id="b", rebalance=10_000), 100, "b")
    assert group.tick(2_999).replies == []
    # A member arrived during the first delay: wait another (at most the remaining) delay.
    assert group.tick(3_000).replies == []
    assert group.next_deadline_ms() == 6_000
    results = replies(group.tick(6_000))
    assert set(results) == {"a", "b"} and {r.generation_id for r in results.values()} == {1}


def test_initial_delay_ends_after_one_delay_without_new_members() -> None:
    group = new_group(GroupConfig(initial_rebalance_delay_ms=3_000))
    group.join(params(client_id="a"), 0, "a")
    assert join_result(group.tick(3_000), "a").generation_id == 1


def test_initial_delay_never_exceeds_rebalance_timeout() -> None:
    group = new_group(GroupConfig(initial_rebalance_delay_ms=3_000))
    group.join(params(client_id="a", rebalance=4_000), 0, "a")
    group.join(params(client_id="b", rebalance=4_000), 1, "b")
    group.tick(3_000)
    assert group.next_deadline_ms() == 4_000
    assert len(group.tick(4_000).replies) == 2


# -- sync --------------------------------------------------------------------------------------


def test_sync_errors() -> None:
    group, (leader, follower) = stable_group("a", "b")
    gen = group.generation_id

    def err(**kw) -> ErrorCode:
        kw.setdefault("member_id", leader)
        kw.setdefault("generation_id", gen)
        return sync_result(group.sync(SyncParams(**kw), now_ms=0, waiter="w"), "w").error

    assert err(member_id="nobody") is ErrorCode.unknown_member_id
    assert err(generation_id=gen - 1) is ErrorCode.illegal_generation
    assert err(protocol_name="roundrobin") is ErrorCode.inconsistent_group_protocol
    assert err(protocol_type="connect") is ErrorCode.inconsistent_group_protocol
    assert err(protocol_type="consumer", protocol_name="range") is ErrorCode.none
    group.join(params(client_id="c"), 0, "wc")
    assert err() is ErrorCode.rebalance_in_progress


def test_sync_in_stable_returns_current_assignment() -> None:
    group, (leader, follower) = stable_group("a", "b")
    out = group.sync(SyncParams(member_id=follower, generation_id=group.generation_id), now_ms=0, waiter="w")
    assert sync_result(out, "w").assignment == f"assignment-{follower}".encode()
    assert not out.store_group


def test_parked_sync_gets_rebalance_in_progress_when_a_member_joins() -> None:
    group, (leader, follower) = rebalanced_pair()
    assert (
        group.sync(SyncParams(member_id=follower, generation_id=group.generation_id), now_ms=0, waiter="sb").replies
        == []
    )
    out = group.join(params(client_id="c"), 1, "wc")
    assert sync_result(out, "sb").error is ErrorCode.rebalance_in_progress
    assert group.state is S.PREPARING_REBALANCE


def test_write_failed_rebalances() -> None:
    group, (leader, follower) = stable_group("a", "b")
    assert group.write_failed(ErrorCode.not_coordinator, 0).replies == []
    assert group.state is S.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in group.members.values())


# -- heartbeat -------------------------------------------------------------------------------


def test_heartbeat_errors() -> None:
    group, (leader, follower) = stable_group("a", "b")
    gen = group.generation_id
    assert heartbeat_error(group, leader, gen) is ErrorCode.none
    assert heartbeat_error(group, "nobody", gen) is ErrorCode.unknown_member_id
    assert heartbeat_error(group, leader, gen + 1) is ErrorCode.illegal_generation
    assert heartbeat_error(group, leader, gen, instance="i") is ErrorCode.unknown_member_id
    group.join(params(leader, client_id="a"), 0, "wa")
    assert heartbeat_error(group, follower, gen) is ErrorCode.rebalance_in_progress
    group.join(params(follower, client_id="b"), 0, "wb")
    assert group.state is S.COMPLETING_REBALANCE
    assert heartbeat_error(group, follower, gen + 1) is ErrorCode.none


def test_heartbeat_on_empty_group() -> None:
    group = new_group()
    assert heartbeat_error(group, "", 0) is ErrorCode.unknown_member_id


def test_heartbeat_refreshes_session() -> None:
    group, (leader,) = stable_group("a")
    group.heartbeat(leader, group.generation_id, None, 9_000)
    assert group.members[leader].heartbeat_deadline_ms == 9_000 + SESSION
    assert group.tick(SESSION).replies == [] and leader in group.members


# -- leave -----------------------------------------------------------------------------------


def test_batched_leave_reports_per_member() -> None:
    group, (leader, follower) = stable_group("a", "b")
    errors, _ = group.leave([(follower, None), ("nobody", None)], 0)
    assert errors == [ErrorCode.none, ErrorCode.unknown_member_id]
    assert list(group.members) == [leader]
    assert group.state is S.PREPARING_REBALANCE
    result = join_result(group.join(params(leader, client_id="a"), 1, "w"), "w")
    assert result.generation_id == 3 and len(result.members) == 1


def test_last_member_leaving_empties_the_group() -> None:
    group, (leader,) = stable_group("a")
    gen = group.generation_id
    errors, out = group.leave([(leader, None)], 0)
    assert errors == [ErrorCode.none] and out.store_group
    assert group.state is S.EMPTY and group.generation_id == gen + 1
    assert group.leader_id is None and group.protocol_name is None
    assert group.protocol_type == "consumer"


def test_leaving_leader_hands_leadership_on() -> None:
    group, (leader, follower) = stable_group("a", "b")
    group.leave([(leader, None)], 0)
    assert group.leader_id == follower


def test_leave_of_parked_member_answers_its_join() -> None:
    group, (leader, follower) = stable_group("a", "b")
    group.join(params(leader, client_id="a"), 0, "wa")
    errors, out = group.leave([(leader, None)], 0)
    assert join_result(out, "wa").error is ErrorCode.unknown_member_id


def test_leave_of_pending_member_lets_the_join_complete() -> None:
    group, (leader,) = stable_group("a")
    group.join(params(client_id="b", require_known=True), 0, "wb")
    pending = next(iter(group.pending_members))
    group.join(params(leader, client_id="a"), 0, "wa")
    assert group.state is S.PREPARING_REBALANCE  # waits for the pending member
    errors, out = group.leave([(pending, None)], 0)
    assert errors == [ErrorCode.none]
    assert join_result(out, "wa").generation_id == 2


# -- expiry ----------------------------------------------------------------------------------


def test_silent_member_expires_after_session_timeout() -> None:
    group, (leader, follower) = stable_group("a", "b")
    gen = group.generation_id
    group.heartbeat(leader, gen, None, SESSION - 1)
    assert group.next_deadline_ms() == SESSION
    group.tick(SESSION - 1)
    assert follower in group.members
    group.tick(SESSION)
    assert follower not in group.members and group.state is S.PREPARING_REBALANCE
    assert heartbeat_error(group, leader, gen, SESSION + 1) is ErrorCode.rebalance_in_progress
    result = join_result(group.join(params(leader, client_id="a"), SESSION + 2, "w"), "w")
    assert result.generation_id == gen + 1 and [m.member_id for m in result.members] == [leader]


def test_member_that_does_not_rejoin_is_removed_at_rebalance_timeout() -> None:
    group, (leader, follower) = stable_group("a", "b")
    group.join(params(client_id="c"), 0, "wc")
    group.join(params(leader, client_id="a"), 0, "wa")
    # The follower keeps heartbeating but never rejoins.
    for t in range(0, REBALANCE, SESSION // 2):
        heartbeat_error(group, follower, group.generation_id, t)
        assert group.tick(t).replies == []
    results = replies(group.tick(REBALANCE))
    assert set(results) == {"wa", "wc"}
    assert follower not in group.members and group.state is S.COMPLETING_REBALANCE


def test_member_that_never_syncs_is_removed_after_rebalance_timeout() -> None:
    group, (leader, follower) = rebalanced_pair()
    gen = group.generation_id
    group.sync(SyncParams(member_id=leader, generation_id=gen, assignments={}), now_ms=1, waiter="sa")
    assert group.state is S.STABLE and group.pending_sync == {follower}
    for t in range(0, REBALANCE, SESSION // 2):
        group.heartbeat(leader, gen, None, t)
        group.heartbeat(follower, gen, None, t)
    group.tick(REBALANCE)
    assert follower not in group.members and group.state is S.PREPARING_REBALANCE


def test_pending_member_expires() -> None:
    group = new_group()
    group.join(params(require_known=True), 0, "w")
    assert group.next_deadline_ms() == SESSION
    group.tick(SESSION)
    assert not group.pending_members
    result = join_result(group.join(params("c-1", require_known=True), 1, "w2"), "w2")
    assert result.error is ErrorCode.unknown_member_id


def test_new_member_join_timeout() -> None:
    cfg = GroupConfig(initial_rebalance_delay_ms=0, new_member_join_timeout_ms=50_000)
    group, (leader,) = stable_group("a", config=cfg)
    # The leader keeps heartbeating but never rejoins, so the join stays open for 100 s;
    # the new member is given up on after new_member_join_timeout_ms.
    assert group.join(params(client_id="b", rebalance=100_000), 0, "wb").replies == []
    for t in range(0, 50_000, 5_000):
        heartbeat_error(group, leader, group.generation_id, t)
        assert group.tick(t).replies == []
    out = group.tick(50_000)
    assert join_result(out, "wb").error is ErrorCode.unknown_member_id
    assert list(group.members) == [leader]


def test_no_timers_on_an_empty_group() -> None:
    assert new_group().next_deadline_ms() is None


# -- static membership -------------------------------------------------------------------------


def static_stable_group() -> tuple:
    group = new_group()
    group.join(params(instance="i1", client_id="a"), 0, "a")
    group.join(params(instance="i2", client_id="b"), 0, "b")
    group.join(params("a-1", instance="i1", client_id="a"), 0, "a2")
    gen = group.generation_id
    group.sync(SyncParams(member_id="b-2", group_instance_id="i2", generation_id=gen), now_ms=0, waiter="sb")
    group.sync(SyncParams(member_id="a-1", group_instance_id="i1", generation_id=gen,
                          assignments={"a-1": b"A", "b-2": b"B"}), now_ms=0, waiter="sa")
    assert group.state is S.STABLE
    return group, gen


def test_static_member_never_gets_member_id_required() -> None:
    group = new_group()
    result = join_result(group.join(params(instance="i1", require_known=True), 0, "w"), "w")
    assert result.error is ErrorCode.none and group.static_members == {"i1": "c-1"}


def test_static_member_restart_keeps_assignment_without_rebalance() -> None:
    group, gen = static_stable_group()
    out = group.join(params(instance="i2", client_id="b", require_known=True), 100, "w")
    result = join_result(out, "w")
    assert out.store_group
    assert result.error is ErrorCode.none and result.generation_id == gen
    new_id = result.member_id
    assert new_id != "b-2" and group.static_members["i2"] == new_id
    assert group.state is S.STABLE
    sync = group.sync(SyncParams(member_id=new_id, group_instance_id="i2", generation_id=gen), now_ms=101, waiter="s")
    assert sync_result(sync, "s").assignment == b"B"
    # The old incarnation is fenced.
    assert heartbeat_error(group, "b-2", gen, instance="i2") is ErrorCode.fenced_instance_id
    old_join = join_result(group.join(params("b-2", instance="i2", client_id="b"), 102, "x"), "x")
    assert old_join.error is ErrorCode.fenced_instance_id


def test_restarted_static_leader_is_not_told_it_leads_before_v9() -> None:
    group, gen = static_stable_group()
    result = join_result(group.join(params(instance="i1", client_id="a"), 100, "w"), "w")
    assert result.leader_id == "a-1" != result.member_id and result.members == ()
    assert group.leader_id == result.member_id


def test_restarted_static_leader_skips_assignment_from_v9() -> None:
    group, gen = static_stable_group()
    out = group.join(params(instance="i1", client_id="a", skip_assignment=True), 100, "w")
    result = join_result(out, "w")
    assert result.leader_id == result.member_id and result.skip_assignment
    assert len(result.members) == 2


def test_static_member_with_new_protocol_triggers_rebalance() -> None:
    sub = subscription("t")
    group = new_group()
    group.join(params(instance="i1", protocols=[("range", sub), ("roundrobin", sub)]), 0, "a")
    group.sync(SyncParams(member_id="c-1", generation_id=1, assignments={}), now_ms=0, waiter="s")
    assert group.state is S.STABLE and group.protocol_name == "range"
    # Same protocols in the same order: the stable group is kept.
    group.join(params(instance="i1", protocols=[("range", sub), ("roundrobin", sub)]), 1, "b")
    assert group.state is S.STABLE
    # A new preference would change the chosen protocol: rebalance.
    out = group.join(params(instance="i1", protocols=[("roundrobin", sub), ("range", sub)]), 2, "c")
    assert group.state is S.COMPLETING_REBALANCE
    assert join_result(out, "c").protocol_name == "roundrobin"


def test_static_member_replaced_while_completing_fences_old_waiter_and_rebalances() -> None:
    group, gen = static_stable_group()
    group.join(params("a-1", instance="i1", client_id="a"), 0, "wa")
    group.join(params("b-2", instance="i2", client_id="b"), 0, "wb")
    assert group.state is S.COMPLETING_REBALANCE
    group.sync(SyncParams(member_id="b-2", group_instance_id="i2", generation_id=gen + 1), now_ms=0, waiter="sb")
    out = group.join(params(instance="i2", client_id="b"), 1, "wb2")
    assert sync_result(out, "sb").error is ErrorCode.fenced_instance_id
    assert group.state is S.PREPARING_REBALANCE


def test_static_member_removed_by_instance_id() -> None:
    group, gen = static_stable_group()
    errors, _ = group.leave([("", "i2"), ("", "nope")], 0)
    assert errors == [ErrorCode.none, ErrorCode.unknown_member_id]
    assert "i2" not in group.static_members and group.state is S.PREPARING_REBALANCE


def test_static_member_that_does_not_rejoin_is_kept_through_the_rebalance() -> None:
    group, gen = static_stable_group()
    group.join(params("a-1", instance="i1", client_id="a"), 0, "wa")
    heartbeat_error(group, "b-2", gen, REBALANCE - 1, instance="i2")
    out = group.tick(REBALANCE)
    result = join_result(out, "wa")
    assert {m.member_id for m in result.members} == {"a-1", "b-2"}


def test_dead_group_refuses_everything() -> None:
    group, (leader,) = stable_group("a")
    group.state = S.DEAD
    assert (
        join_result(group.join(params(), 0, "w"), "w").error is ErrorCode.coordinator_not_available
    )
    assert heartbeat_error(group, leader, 1) is ErrorCode.coordinator_not_available
    with pytest.raises(KafkaError):
        group.leave([(leader, None)], 0)
