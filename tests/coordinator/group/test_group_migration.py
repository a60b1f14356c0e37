"""Online migration of a live group between the classic and the consumer protocol (KIP-848,
group.consumer.migration.policy) in the GroupCoordinator actor over real partition logs: the
upgrade, classic members answered from the consumer group, restarts, the downgrade, the policy's
refusals, and the deadlines a restart must restore. Clients are simulated: each keeps what its
last answer gave it, and no partition may ever be held by two of them."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest
from coordinator.group.consumer_protocol import decode_assignment, encode_assignment
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.member import SyncParams
from coordinator.group.state import GroupState
from storage.api import TopicPartition

from .helpers import REBALANCE, SESSION, params
from .test_consumer_group_coordinator import node, topic_id
from .test_group_coordinator import Node, oam

__all__ = ("node",)

ALL = frozenset(range(4))


def tid(node: Node) -> uuid.UUID:
    return topic_id(node)  # type: ignore[no-any-return]


def enc(*parts: int) -> bytes:
    return encode_assignment({"t": frozenset(parts)}, 0)


async def classic_pair(coord: GroupCoordinator) -> tuple[str, str]:
    """A Stable classic group "g" at generation 2: a holds t-0,1 and b t-2,3."""
    first = await coord.join_group("g", params(client_id="a"))
    a = first.member_id
    await coord.sync_group("g", SyncParams(member_id=a, generation_id=1, assignments={a: enc(0, 1, 2, 3)}))
    second = asyncio.ensure_future(coord.join_group("g", params(client_id="b")))
    while await coord.heartbeat("g", member_id=a, generation_id=1) is ErrorCode.none:
        pass
    await coord.join_group("g", params(a, client_id="a"))
    b = (await second).member_id
    sync_b = asyncio.ensure_future(coord.sync_group("g", SyncParams(member_id=b, generation_id=2)))
    await coord.sync_group("g", SyncParams(member_id=a, generation_id=2, assignments={a: enc(0, 1), b: enc(2, 3)}))
    assert decode_assignment((await sync_b).assignment) == {"t": frozenset({2, 3})}
    return a, b


def disjoint(*held: frozenset[int]) -> bool:
    return sum(len(h) for h in held) == len(frozenset().union(*held))


async def consumer_join(coord: GroupCoordinator, member: str, **extra: object):  # type: ignore[no-untyped-def]
    fields: dict[str, object] = {"member_id": member, "member_epoch": 0, "rebalance_timeout_ms": REBALANCE,
                                 "subscribed_topic_names": ("t",), "owned": {}}
    fields.update(extra)
    return await coord.consumer_group_heartbeat("g", HeartbeatRequest(**fields))  # type: ignore[arg-type]


async def rejoin_classic(coord: GroupCoordinator, member: str) -> tuple[int, frozenset[int]]:
    """An eager classic client told to rebalance: it gives up everything, joins, then syncs."""
    joined = await coord.join_group("g", params(member, client_id=member))
    assert joined.error is ErrorCode.none and joined.leader_id == "" and joined.members == ()
    synced = await coord.sync_group("g", SyncParams(member_id=member, generation_id=joined.generation_id,
                                                    protocol_type="consumer", protocol_name="range"))
    assert synced.error is ErrorCode.none, synced
    return joined.generation_id, decode_assignment(synced.assignment).get("t", frozenset())


async def upgraded(node: Node) -> tuple[GroupCoordinator, str, str, dict[str, frozenset[int]]]:
    """Classic a and b, then consumer member c: the group is upgraded and rebalanced to the end."""
    coord = node.coordinator
    assert coord is not None
    a, b = await classic_pair(coord)
    held = {"a": frozenset({0, 1}), "b": frozenset({2, 3})}
    rc = await consumer_join(coord, "c")
    assert rc.member_epoch == 3 and coord.groups["g"].consumer is not None
    held["c"] = rc.assignment.get(tid(node), frozenset())
    assert disjoint(*held.values())  # c waits for what a and b still hold
    for name, member in (("a", a), ("b", b)):
        assert await coord.heartbeat("g", member_id=member, generation_id=2) is ErrorCode.rebalance_in_progress
        held[name] = frozenset()  # eager: revoked before rejoining
        generation, held[name] = await rejoin_classic(coord, member)
        assert generation == 3 and disjoint(*held.values())
    rc = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="c", member_epoch=3,
                                                                    owned={tid(node): held["c"]}))
    held["c"] = rc.assignment[tid(node)] if rc.assignment is not None else held["c"]
    assert disjoint(*held.values()) and frozenset().union(*held.values()) == ALL and all(held.values())
    return coord, a, b, held


async def test_upgrade_classic_members_rejoin_through_the_consumer_group(node: Node) -> None:
    coord, a, b, held = await upgraded(node)
    assert await coord.heartbeat("g", member_id=a, generation_id=3) is ErrorCode.none
    assert await coord.heartbeat("g", member_id=a, generation_id=2) is ErrorCode.illegal_generation
    tp = TopicPartition("t", min(held["a"]))
    assert await coord.commit_offsets("g", {tp: oam(7)}, member_id=a, generation_id=3) == {tp: ErrorCode.none}
    # A generation newer than the member's; an older one may commit what a has held since then (KIP-1251).
    assert await coord.commit_offsets("g", {tp: oam(8)}, member_id=a, generation_id=4) == {
        tp: ErrorCode.illegal_generation}
    [described] = await coord.consumer_group_describe(["g"])
    kinds = {d.member.member_id: d.member.uses_classic_protocol for d in described.members}
    assert kinds == {a: True, b: True, "c": False} and described.state == "Stable"
    [listed] = await coord.list_groups()
    assert listed[:2] == ("g", "consumer")


async def test_a_restart_restores_the_converted_group(node: Node) -> None:
    _, a, b, held = await upgraded(node)
    coord = await node.restart()
    [described] = await coord.consumer_group_describe(["g"])
    members = {d.member.member_id: d.member for d in described.members}
    assert members[a].classic is not None and members[a].classic.session_timeout_ms == SESSION
    assert {n: members[m].assigned.get(tid(node), frozenset()) for n, m in (("a", a), ("b", b), ("c", "c"))} == held
    assert await coord.heartbeat("g", member_id=b, generation_id=3) is ErrorCode.none
    synced = await coord.sync_group("g", SyncParams(member_id=b, generation_id=3))
    assert decode_assignment(synced.assignment) == {"t": held["b"]}


async def test_downgrade_when_the_last_consumer_member_leaves(node: Node) -> None:
    coord, a, b, held = await upgraded(node)
    tp = TopicPartition("t", 0)
    await coord.commit_offsets("g", {tp: oam(5)})  # refused: the group has members
    await coord.commit_offsets("g", {tp: oam(5)}, member_id="c", generation_id=3)
    left = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="c", member_epoch=-1))
    assert left.member_epoch == -1
    group = coord.groups["g"]
    assert group.consumer is None and group.state is GroupState.PREPARING_REBALANCE
    # The members' generation (their epoch) stays valid: Kafka converts instead of fencing c, so
    # the group epoch is not bumped; a commit is accepted while the rebalance is prepared.
    assert group.generation_id == 3 and set(group.members) == {a, b}
    tb = TopicPartition("t", min(held["b"]))
    assert await coord.commit_offsets("g", {tb: oam(2)}, member_id=b, generation_id=3) == {tb: ErrorCode.none}
    assert await coord.heartbeat("g", member_id=a, generation_id=3) is ErrorCode.rebalance_in_progress
    ja = asyncio.ensure_future(coord.join_group("g", params(a, client_id="a")))
    jb = await coord.join_group("g", params(b, client_id="b"))
    assert jb.generation_id == (await ja).generation_id == 4
    [f] = await coord.fetch_offsets("g", [tp])
    assert f.committed_offset == 5
    coord = await node.restart()  # the classic record written by the downgrade is what loads
    assert coord.groups["g"].consumer is None and coord.groups["g"].generation_id >= 3
    [f] = await coord.fetch_offsets("g", [tp])
    assert f.committed_offset == 5


async def test_upgrade_only_policy_keeps_the_consumer_group(node: Node) -> None:
    node.consumer_config = ConsumerGroupConfig(migration_policy="upgrade")
    await node.restart()
    coord, _, _, _ = await upgraded(node)
    await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="c", member_epoch=-1))
    consumer = coord.groups["g"].consumer
    assert consumer is not None and len(consumer.members) == 2


async def test_downgrade_only_policy_refuses_the_upgrade(node: Node) -> None:
    node.consumer_config = ConsumerGroupConfig(migration_policy="downgrade")
    coord = await node.restart()
    await classic_pair(coord)
    with pytest.raises(Exception) as refused:
        await consumer_join(coord, "c")
    assert "online upgrade is disabled" in str(refused.value)


async def test_a_classic_member_that_never_rejoins_is_fenced_after_its_rebalance_timeout(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    a, b = await classic_pair(coord)
    await consumer_join(coord, "c")
    generation, _ = await rejoin_classic(coord, a)
    # b keeps heartbeating (so its session never lapses) but never rejoins.
    for _ in range(REBALANCE // (SESSION // 2)):
        assert await coord.heartbeat("g", member_id=b, generation_id=2) is ErrorCode.rebalance_in_progress
        await coord.heartbeat("g", member_id=a, generation_id=generation)
        node.clock.now += SESSION // 2
    assert await coord.heartbeat("g", member_id=b, generation_id=2) is ErrorCode.unknown_member_id
    consumer = coord.groups["g"].consumer
    assert consumer is not None and set(consumer.members) == {a, "c"}


async def test_a_restart_restores_the_revocation_deadline(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    t = tid(node)
    await consumer_join(coord, "x")
    await consumer_join(coord, "y")  # x must now give partitions up to y
    rx = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="x", member_epoch=1, owned={t: ALL}))
    assert rx.member_epoch == 1  # still revoking
    coord = await node.restart()
    node.clock.now += REBALANCE  # well inside the 45 s session timeout restarted at load
    ry = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="y", member_epoch=2, owned={}))
    consumer = coord.groups["g"].consumer
    assert consumer is not None and set(consumer.members) == {"y"}  # x was fenced: y proceeds
    assert ry.assignment is not None and ry.assignment[t] == ALL


async def test_parked_joins_are_told_to_rejoin_when_the_group_upgrades(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    await classic_pair(coord)
    parked = asyncio.ensure_future(coord.join_group("g", params(client_id="d")))
    while coord.groups["g"].state is not GroupState.PREPARING_REBALANCE:
        await coord.list_groups()  # a turn of the actor
    await consumer_join(coord, "c")
    told = await parked
    assert told.error is ErrorCode.rebalance_in_progress and told.member_id
    generation, _ = await rejoin_classic(coord, told.member_id)
    assert generation == 3


async def test_a_classic_join_with_a_bad_session_timeout_leaves_the_consumer_group_alone(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    await consumer_join(coord, "c")
    refused = await coord.join_group("g", params(session=1))
    assert refused.error is ErrorCode.invalid_session_timeout
    consumer = coord.groups["g"].consumer
    assert consumer is not None and set(consumer.members) == {"c"}


async def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades(node: Node) -> None:
    # The consumer-protocol static member left for a while (epoch -2); its instance comes back
    # on the classic protocol and takes its place: only classic members remain, so the group
    # goes back to the classic protocol (Kafka's downgrade on static member replacement).
    coord = node.coordinator
    assert coord is not None
    first = await coord.join_group("g", params(client_id="a"))
    await coord.sync_group("g", SyncParams(member_id=first.member_id, generation_id=1,
                                           assignments={first.member_id: enc(0)}))
    static = await consumer_join(coord, "s1", instance_id="i1")
    consumer = coord.groups["g"].consumer
    assert consumer is not None and not consumer.members["s1"].uses_classic_protocol
    await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="s1", member_epoch=-2, instance_id="i1"))
    assert static.member_epoch > 0 and coord.groups["g"].consumer is not None
    back = await coord.join_group("g", params(instance="i1", client_id="b"))
    assert back.error is ErrorCode.none
    group = coord.groups["g"]
    assert group.consumer is None and list(group.static_members) == ["i1"] and len(group.members) == 2


async def test_a_consumer_static_member_replaces_its_classic_predecessor_at_once(node: Node) -> None:
    # A static classic consumer restarted with group.protocol=consumer: the classic incarnation
    # sent no LeaveGroup (static members do not), yet the new one takes its place at once.
    coord = node.coordinator
    assert coord is not None
    t = tid(node)
    first = await coord.join_group("g", params(instance="i1", client_id="a"))
    await coord.sync_group("g", SyncParams(member_id=first.member_id, generation_id=1, group_instance_id="i1",
                                           assignments={first.member_id: enc(0, 1, 2, 3)}))
    await consumer_join(coord, "other")  # the upgrade; the classic i1 keeps its partitions
    joined = await consumer_join(coord, "new-i1", instance_id="i1")
    consumer = coord.groups["g"].consumer
    assert consumer is not None and set(consumer.members) == {"other", "new-i1"}
    assert not consumer.members["new-i1"].uses_classic_protocol
    again = await coord.consumer_group_heartbeat("g", HeartbeatRequest(
        member_id="new-i1", member_epoch=joined.member_epoch, instance_id="i1", owned={t: joined.assignment[t]}))
    assert again.member_id == "new-i1"
