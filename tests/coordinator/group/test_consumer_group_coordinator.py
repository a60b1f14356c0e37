"""Consumer-protocol (KIP-848) groups in the GroupCoordinator actor over real partition logs:
records persisted and replayed on restart, offsets committed and fetched with member epochs,
classic and consumer groups side by side, and the conversions Kafka allows between them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.consumer_group import ConsumerGroupState
from coordinator.group.consumer_heartbeat import ConsumerGroupConfig, HeartbeatRequest
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.state import GroupState
from coordinator.transaction.metadata import ProducerIdAndEpoch
from protocol.errors import KafkaError
from storage.api import TopicPartition

from .helpers import params
from .test_group_coordinator import Clock, Node, oam


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = Node(tmp_path / "data", Clock())
    await n.start()
    assert n.logs is not None
    await n.logs.create_topic("t", 4, {})
    yield n
    await n.stop()


def topic_id(node: Node):  # type: ignore[no-untyped-def]
    assert node.logs is not None
    return node.logs.topics["t"].topic_id


async def join(coord: GroupCoordinator, member: str, group: str = "g", **extra: object):  # type: ignore[no-untyped-def]
    fields: dict[str, object] = {"member_id": member, "member_epoch": 0, "rebalance_timeout_ms": 30_000,
                                 "subscribed_topic_names": ("t",), "owned": {}}
    fields.update(extra)
    return await coord.consumer_group_heartbeat(group, HeartbeatRequest(**fields))  # type: ignore[arg-type]


async def test_members_epochs_and_assignments_survive_a_restart(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    t = topic_id(node)
    await join(coord, "a")
    await join(coord, "b")
    ra = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="a", member_epoch=1,
                                                                    owned={t: frozenset(range(4))}))
    kept = ra.assignment[t]
    coord = await node.restart()
    [described] = await coord.consumer_group_describe(["g"])
    assert (described.group_epoch, described.assignment_epoch) == (2, 2)
    members = {d.member.member_id: d.member for d in described.members}
    assert members["a"].member_epoch == 1 and members["a"].pending_revocation == {t: frozenset(range(4)) - kept}
    assert members["b"].member_epoch == 2 and members["b"].assigned == {}
    # The members carry on where they were: a revokes, then b gets what a gave up.
    ra = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="a", member_epoch=1, owned={t: kept}))
    rb = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="b", member_epoch=2, owned={}))
    assert ra.member_epoch == 2 and rb.assignment == {t: frozenset(range(4)) - kept}
    coord = await node.restart()
    assert [g for g in await coord.list_groups()] == [("g", "consumer", ConsumerGroupState.STABLE)]


async def test_a_member_that_left_stays_gone_after_a_restart(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    await join(coord, "a")
    await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="a", member_epoch=-1))
    coord = await node.restart()
    [described] = await coord.consumer_group_describe(["g"])
    assert described.state == "Empty" and described.members == () and described.group_epoch == 2
    assert await coord.delete_groups(["g"]) == {"g": ErrorCode.none}
    coord = await node.restart()
    [gone] = await coord.consumer_group_describe(["g"])
    assert gone.error == ErrorCode.group_id_not_found


async def test_offset_commit_and_fetch_check_the_member_epoch(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    tp = TopicPartition("t", 0)
    await join(coord, "a")
    assert await coord.commit_offsets("g", {tp: oam(5)}, member_id="a", generation_id=1) == {tp: ErrorCode.none}
    assert await coord.commit_offsets("g", {tp: oam(6)}, member_id="a", generation_id=0) == {
        tp: ErrorCode.stale_member_epoch}
    assert await coord.commit_offsets("g", {tp: oam(6)}, member_id="x", generation_id=1) == {
        tp: ErrorCode.unknown_member_id}
    assert await coord.commit_offsets("g", {tp: oam(6)}, member_id="a", generation_id=1, api_version=8) == {
        tp: ErrorCode.unsupported_version}
    assert await coord.commit_offsets("g", {tp: oam(6)}) == {tp: ErrorCode.unknown_member_id}
    txn = ProducerIdAndEpoch(producer_id=7, epoch=0)
    assert await coord.commit_offsets("g", {tp: oam(8)}, member_id="a", generation_id=0, producer=txn,
                                      api_version=6) == {tp: ErrorCode.stale_member_epoch}
    # TxnOffsetCommit before v6 has no STALE_MEMBER_EPOCH: Kafka answers ILLEGAL_GENERATION.
    assert await coord.commit_offsets("g", {tp: oam(8)}, member_id="a", generation_id=0, producer=txn,
                                      api_version=5) == {tp: ErrorCode.illegal_generation}
    assert await coord.commit_offsets("g", {tp: oam(8)}, member_id="a", generation_id=1, producer=txn) == {
        tp: ErrorCode.none}
    [f] = await coord.fetch_offsets("g", [tp], member_id="a", member_epoch=1)
    assert f.committed_offset == 5
    with pytest.raises(KafkaError) as stale:
        await coord.fetch_offsets("g", [tp], member_id="a", member_epoch=3)
    assert stale.value.code == ErrorCode.stale_member_epoch
    [admin] = await coord.fetch_offsets("g", [tp])
    assert admin.committed_offset == 5


async def test_classic_and_consumer_groups_side_by_side_and_converting_when_empty(node: Node) -> None:
    # group.consumer.migration.policy=disabled: only empty groups change type.
    node.consumer_config = ConsumerGroupConfig(migration_policy="disabled")
    coord = await node.restart()
    tp = TopicPartition("t", 0)
    await coord.commit_offsets("old", {tp: oam(3)})  # an offsets-only classic group
    await join(coord, "a", group="old")  # empty classic -> consumer, offsets kept
    [f] = await coord.fetch_offsets("old", [tp])
    assert f.committed_offset == 3
    classic = await coord.join_group("c", params())
    assert classic.error == ErrorCode.none
    with pytest.raises(KafkaError) as refused:
        await join(coord, "x", group="c")
    assert refused.value.code == ErrorCode.group_id_not_found
    assert refused.value.message == "Cannot upgrade classic group c to consumer group because online upgrade " \
        "is disabled."
    # Nor does a classic member join a consumer group with members (Kafka 4.4 answers this only
    # under `disabled`; the other policies let it in as a classic member).
    assert (await coord.join_group("old", params())).error == ErrorCode.inconsistent_group_protocol
    [not_classic] = await coord.describe_groups(["old"])
    assert not_classic.error == ErrorCode.group_id_not_found
    [not_consumer] = await coord.consumer_group_describe(["c"])
    assert not_consumer.error == ErrorCode.group_id_not_found
    listed = {g: (ptype, str(state)) for g, ptype, state in await coord.list_groups()}
    assert listed == {"old": ("consumer", "Stable"), "c": ("consumer", str(GroupState.COMPLETING_REBALANCE))}
    assert await coord.delete_groups(["old"]) == {"old": ErrorCode.non_empty_group}
    await coord.consumer_group_heartbeat("old", HeartbeatRequest(member_id="a", member_epoch=-1))
    back = await coord.join_group("old", params())  # empty consumer -> classic
    assert back.error == ErrorCode.none


async def test_a_groups_own_heartbeat_interval_and_session_timeout_are_used(node: Node) -> None:
    """Group configs (set by the broker: coordinator.group_overrides) win over the broker's
    group.consumer.* settings, for that group only, from its next heartbeat."""
    coord = node.coordinator
    assert coord is not None
    overrides = {"heartbeat_interval_ms": 7_000, "session_timeout_ms": 50_000}
    coord.group_overrides = lambda g: overrides if g == "own" else {}
    own, other = await join(coord, "a", "own"), await join(coord, "b", "other")
    default = coord.consumer_config.heartbeat_interval_ms
    assert (own.heartbeat_interval_ms, other.heartbeat_interval_ms) == (7_000, default)
    assert coord.consumer_config_for("own").session_timeout_ms == 50_000
    assert coord.consumer_config_for("other") is coord.consumer_config


async def test_an_older_member_epoch_commits_what_the_member_has_held_since(node: Node) -> None:
    """KIP-1251 (Kafka 4.3+): each held partition keeps the epoch it was assigned at, and a commit
    of an older member epoch is accepted for the partitions held since that epoch; a partition the
    member gave up or got later, or a newer epoch, is STALE_MEMBER_EPOCH. The epochs survive a
    restart (tag 0 of the current-assignment record)."""
    coord = node.coordinator
    assert coord is not None
    t = topic_id(node)
    await join(coord, "a")  # epoch 1, all four partitions
    await join(coord, "b")
    ra = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="a", member_epoch=1,
                                                                    owned={t: frozenset(range(4))}))
    kept = ra.assignment[t]
    assert 0 < len(kept) < 4
    ra = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="a", member_epoch=1, owned={t: kept}))
    assert ra.member_epoch == 2
    given_up = frozenset(range(4)) - kept
    tp_kept, tp_gone = TopicPartition("t", min(kept)), TopicPartition("t", min(given_up))
    for restarted in (False, True):
        if restarted:
            coord = await node.restart()
        assert await coord.commit_offsets("g", {tp_kept: oam(5)}, member_id="a", generation_id=1) == {
            tp_kept: ErrorCode.none}, restarted
        assert await coord.commit_offsets("g", {tp_kept: oam(5), tp_gone: oam(5)}, member_id="a",
                                          generation_id=1) == dict.fromkeys((tp_kept, tp_gone),
                                                                            ErrorCode.stale_member_epoch)
        assert await coord.commit_offsets("g", {tp_kept: oam(6)}, member_id="a", generation_id=3) == {
            tp_kept: ErrorCode.stale_member_epoch}
        assert await coord.commit_offsets("g", {tp_kept: oam(6)}, member_id="a", generation_id=2) == {
            tp_kept: ErrorCode.none}
    # b got its partitions at epoch 2 or later: epoch 1 holds nothing of b's
    rb = await coord.consumer_group_heartbeat("g", HeartbeatRequest(member_id="b", member_epoch=2, owned={}))
    tp_b = TopicPartition("t", min(rb.assignment[t] if rb.assignment else given_up))
    assert await coord.commit_offsets("g", {tp_b: oam(1)}, member_id="b", generation_id=1) == {
        tp_b: ErrorCode.stale_member_epoch}
    # A producer outside the group (epoch -1, no member) may commit with its transaction.
    txn = ProducerIdAndEpoch(producer_id=9, epoch=0)
    assert await coord.commit_offsets("g", {tp_b: oam(2)}, producer=txn, api_version=6) == {tp_b: ErrorCode.none}
