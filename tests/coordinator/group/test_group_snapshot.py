"""A group written to __consumer_offsets comes back as it was; DescribeGroups' summary."""

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.log import group_metadata_record, parse_record
from coordinator.group.member import SyncParams
from coordinator.group.snapshot import describe, load_group, to_value
from coordinator.group.state import GroupState
from protocol.errors import KafkaError

from .helpers import NO_DELAY, SESSION, join_result, params, stable_group, subscription


def reload(group, now_ms: int = 0):
    _, value = parse_record(group_metadata_record(group.group_id, to_value(group), timestamp=0))
    return load_group(group.group_id, value, NO_DELAY, now_ms)


def test_stable_group_round_trips_through_its_record() -> None:
    group, (leader, follower) = stable_group("a", "b")
    loaded = reload(group, now_ms=1_000)
    assert loaded.state is GroupState.STABLE
    assert (loaded.generation_id, loaded.leader_id, loaded.protocol_name, loaded.protocol_type) == (
        2,
        leader,
        "range",
        "consumer",
    )
    assert {m: v.assignment for m, v in loaded.members.items()} == {
        leader: f"assignment-{leader}".encode(),
        follower: f"assignment-{follower}".encode(),
    }
    assert loaded.subscribed_topics == {"t"}
    # Members carry on with the same generation; the silent ones expire.
    loaded.heartbeat(leader, 2, None, 1_000 + SESSION - 1)
    loaded.tick(1_000 + SESSION)
    assert list(loaded.members) == [leader] and loaded.state is GroupState.PREPARING_REBALANCE


def test_loaded_member_rejoining_with_same_metadata_keeps_generation() -> None:
    group, (leader, follower) = stable_group("a", "b")
    loaded = reload(group)
    result = join_result(loaded.join(params(follower, client_id="b"), 0, "w"), "w")
    assert result.error is ErrorCode.none and result.generation_id == 2


def test_empty_group_round_trips() -> None:
    group, (leader,) = stable_group("a")
    group.leave([(leader, None)], 500)
    loaded = reload(group)
    assert loaded.state is GroupState.EMPTY and loaded.generation_id == 2
    assert loaded.protocol_type == "consumer" and loaded.current_state_timestamp == 500
    with pytest.raises(KafkaError) as exc:
        loaded.heartbeat(leader, 2, None, 0)
    assert exc.value.code is ErrorCode.unknown_member_id


def test_static_members_round_trip() -> None:
    group, _ = stable_group("a")
    group.join(params(instance="i", client_id="s"), 0, "w")
    group.join(params(group.leader_id, client_id="a"), 0, "w2")
    gen = group.generation_id
    group.sync(SyncParams(member_id=group.leader_id, generation_id=gen, assignments={}), now_ms=0, waiter="s")
    loaded = reload(group)
    assert loaded.static_members == group.static_members


def test_describe_hides_metadata_until_stable() -> None:
    group, (leader, follower) = stable_group("a", "b")
    summary = describe(group)
    assert summary.state is GroupState.STABLE and summary.protocol == "range"
    assert summary.members[0].metadata == subscription("t")
    assert summary.members[0].assignment == f"assignment-{leader}".encode()
    group.join(params(client_id="c"), 0, "w")
    summary = describe(group)
    assert summary.state is GroupState.PREPARING_REBALANCE and summary.protocol == ""
    assert all(m.metadata == b"" and m.assignment == b"" for m in summary.members)
    assert len(summary.members) == 3
