"""The GroupCoordinator actor over real partition logs: persistence, replay, timers, txn offsets.

Time comes from a hand-driven clock; the actor runs its timers whenever a command arrives, so
moving the clock and sending any command is enough to make a deadline pass (no sleeps).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.config import GroupConfig
from coordinator.group.consumer_heartbeat import ConsumerGroupConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.log import CONSUMER_OFFSETS_TOPIC
from coordinator.group.member import SyncParams
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.group.state import GroupState
from coordinator.transaction.metadata import ProducerIdAndEpoch
from protocol.control import ControlRecordType, build_end_txn_marker
from storage.api import AppendOrigin, TopicPartition
from storage.log_manager import LogManager

from .helpers import SESSION, params

TXN = ProducerIdAndEpoch(producer_id=42, epoch=0)

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
CONFIG = GroupConfig(initial_rebalance_delay_ms=0, offsets_topic_num_partitions=3)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class Node:
    """A LogManager plus a GroupCoordinator over one data directory, restartable."""

    def __init__(self, data_dir: Path, clock: Clock) -> None:
        self.data_dir, self.clock = data_dir, clock
        self.logs: LogManager | None = None
        self.coordinator: GroupCoordinator | None = None
        self.consumer_config: ConsumerGroupConfig | None = None
        self.log_defaults: dict[str, object] = {}

    async def start(self) -> GroupCoordinator:
        self.logs = LogManager(self.data_dir, self.log_defaults)
        self.logs.load()
        self.logs.start()
        self.coordinator = GroupCoordinator(self.logs, CONFIG, clock_ms=self.clock,
                                            consumer_config=self.consumer_config)
        await self.coordinator.start()
        return self.coordinator

    async def stop(self) -> None:
        if self.coordinator is not None:
            await self.coordinator.stop()
        if self.logs is not None:
            await self.logs.close()

    async def restart(self) -> GroupCoordinator:
        await self.stop()
        return await self.start()


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = Node(tmp_path / "data", Clock())
    await n.start()
    yield n
    await n.stop()


def oam(offset: int, metadata: str = "") -> OffsetAndMetadata:
    return OffsetAndMetadata(committed_offset=offset, metadata=metadata)


async def fetched(coord: GroupCoordinator, group: str, tps=(TP0, TP1), stable: bool = False):
    return {
        f.topic_partition: (f.committed_offset, f.error)
        for f in await coord.fetch_offsets(group, list(tps), stable)
    }


async def test_creates_the_internal_topic(node: Node) -> None:
    assert node.logs is not None
    meta = node.logs.topics[CONSUMER_OFFSETS_TOPIC]
    # offsets.topic.segment.bytes (100 MiB by default) sizes its segments, as Kafka does
    assert meta.partitions == 3
    assert meta.configs == {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
    assert node.coordinator is not None
    assert node.coordinator.partition_for("hello").partition == 99162322 % 3


async def test_standalone_commits_survive_restart(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    result = await coord.commit_offsets("g", {TP0: oam(5, "m"), TP1: oam(7)})
    assert result == {TP0: ErrorCode.none, TP1: ErrorCode.none}
    await coord.commit_offsets("g", {TP0: oam(6)})
    coord = await node.restart()
    assert await fetched(coord, "g") == {TP0: (6, ErrorCode.none), TP1: (7, ErrorCode.none)}
    [all_offsets] = [await coord.fetch_offsets("g", None)]
    assert {f.topic_partition for f in all_offsets} == {TP0, TP1}


async def test_unknown_group_fetch_returns_no_offset(node: Node) -> None:
    assert node.coordinator is not None
    assert await fetched(node.coordinator, "nope", [TP0]) == {TP0: (-1, ErrorCode.none)}
    assert await node.coordinator.fetch_offsets("nope", None) == []


async def test_commit_errors(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    assert await coord.commit_offsets("fresh", {TP0: oam(1)}, member_id="m", generation_id=3) == {
        TP0: ErrorCode.illegal_generation
    }
    big = "x" * (CONFIG.offset_metadata_max_bytes + 1)
    result = await coord.commit_offsets("g", {TP0: oam(1, big), TP1: oam(2)})
    assert result == {TP0: ErrorCode.offset_metadata_too_large, TP1: ErrorCode.none}


async def join_two(coord: GroupCoordinator, group: str = "g"):
    """Two members the way clients do it: the second join parks until the leader, told by its
    heartbeat that a rebalance started, rejoins."""
    first = await coord.join_group(group, params(client_id="a"))
    leader = first.member_id
    await coord.sync_group(group, SyncParams(member_id=leader, generation_id=1, assignments={}))
    second_task = asyncio.ensure_future(coord.join_group(group, params(client_id="b")))
    while await coord.heartbeat(group, member_id=leader, generation_id=1) is ErrorCode.none:
        pass
    rejoin = await coord.join_group(group, params(leader, client_id="a"))
    second = await second_task
    assert rejoin.generation_id == second.generation_id == 2
    sync_b = asyncio.ensure_future(
        coord.sync_group(group, SyncParams(member_id=second.member_id, generation_id=2))
    )
    sync_a = await coord.sync_group(group, SyncParams(member_id=leader, generation_id=2,
                                                      assignments={leader: b"A", second.member_id: b"B"}))
    assert sync_a.assignment == b"A" and (await sync_b).assignment == b"B"
    return leader, second.member_id


async def test_group_rebalance_through_the_actor(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    leader, follower = await join_two(coord)
    assert await coord.heartbeat("g", member_id=follower, generation_id=2) is ErrorCode.none
    assert await coord.heartbeat("g", member_id="x", generation_id=2) is ErrorCode.unknown_member_id
    assert await coord.heartbeat("", member_id="x", generation_id=2) is ErrorCode.invalid_group_id
    assert await coord.commit_offsets("g", {TP0: oam(3)}, member_id=leader, generation_id=1) == {
        TP0: ErrorCode.illegal_generation
    }
    assert await coord.commit_offsets("g", {TP0: oam(3)}) == {TP0: ErrorCode.unknown_member_id}
    assert await coord.commit_offsets("g", {TP0: oam(3)}, member_id=leader, generation_id=2) == {
        TP0: ErrorCode.none
    }
    [summary] = await coord.describe_groups(["g"])
    assert summary.state is GroupState.STABLE and len(summary.members) == 2
    assert await coord.list_groups() == [("g", "consumer", GroupState.STABLE)]
    assert await coord.delete_groups(["g", "nope"]) == {
        "g": ErrorCode.non_empty_group, "nope": ErrorCode.group_id_not_found,
    }


async def test_silent_member_expires_on_the_actors_timer(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    leader, follower = await join_two(coord)
    node.clock.now += SESSION - 1
    assert await coord.heartbeat("g", member_id=leader, generation_id=2) is ErrorCode.none
    node.clock.now += 1
    # The follower's session ran out: the leader is told to rejoin.
    assert await coord.heartbeat("g", member_id=leader, generation_id=2) is (
        ErrorCode.rebalance_in_progress
    )
    result = await coord.join_group("g", params(leader, client_id="a"))
    assert result.generation_id == 3 and [m.member_id for m in result.members] == [leader]


async def test_stable_group_survives_restart(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    leader, follower = await join_two(coord)
    await coord.commit_offsets("g", {TP0: oam(9)}, member_id=leader, generation_id=2)
    coord = await node.restart()
    assert await coord.heartbeat("g", member_id=follower, generation_id=2) is ErrorCode.none
    sync = await coord.sync_group("g", SyncParams(member_id=follower, generation_id=2))
    assert sync.assignment == b"B"
    assert await fetched(coord, "g", [TP0]) == {TP0: (9, ErrorCode.none)}


async def commit_then_leave(coord: GroupCoordinator) -> None:
    """One member of "g" commits TP0 at 1 and leaves: an EMPTY group that holds an offset."""
    first = await coord.join_group("g", params(client_id="a"))
    await coord.sync_group("g", SyncParams(member_id=first.member_id, generation_id=1, assignments={}))
    await coord.commit_offsets("g", {TP0: oam(1)}, member_id=first.member_id, generation_id=1)
    assert await coord.leave_group("g", [(first.member_id, None)]) == (
        ErrorCode.none, [ErrorCode.none]
    )


async def test_empty_group_can_be_deleted_and_stays_deleted(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    await commit_then_leave(coord)
    [summary] = await coord.describe_groups(["g"])
    assert summary.state is GroupState.EMPTY
    assert await coord.delete_groups(["g"]) == {"g": ErrorCode.none}
    coord = await node.restart()
    assert await coord.list_groups() == []
    assert await fetched(coord, "g", [TP0]) == {TP0: (-1, ErrorCode.none)}


async def test_delete_offsets(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    await coord.commit_offsets("g", {TP0: oam(1), TP1: oam(2)})
    assert await coord.delete_offsets("g", [TP0]) == (ErrorCode.none, {TP0: ErrorCode.none})
    assert await coord.delete_offsets("nope", [TP0]) == (ErrorCode.group_id_not_found, {})
    leader, _ = await join_two(coord, "h")
    assert await coord.delete_offsets("h", [TP0, TopicPartition("u", 0)]) == (
        ErrorCode.none,
        {TP0: ErrorCode.group_subscribed_to_topic, TopicPartition("u", 0): ErrorCode.none},
    )
    coord = await node.restart()
    assert await fetched(coord, "g") == {TP0: (-1, ErrorCode.none), TP1: (2, ErrorCode.none)}


async def write_marker(node: Node, group: str, producer_id: int, commit: bool) -> None:
    assert node.logs is not None and node.coordinator is not None
    plog = node.logs.get_log(node.coordinator.partition_for(group))
    marker = build_end_txn_marker(
        producer_id=producer_id, producer_epoch=0, coordinator_epoch=0,
        control_type=ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
        timestamp=node.clock.now,
    )
    await plog.append(bytes(marker), AppendOrigin.COORDINATOR)


@pytest.mark.parametrize("commit", [True, False])
async def test_txn_offsets_pending_until_marker(node: Node, commit: bool) -> None:
    coord = node.coordinator
    assert coord is not None
    await coord.commit_offsets("g", {TP0: oam(1)})
    result = await coord.commit_offsets("g", {TP0: oam(10)}, producer=TXN)
    assert result == {TP0: ErrorCode.none}
    assert await fetched(coord, "g", [TP0]) == {TP0: (1, ErrorCode.none)}
    assert await fetched(coord, "g", [TP0], stable=True) == {
        TP0: (-1, ErrorCode.unstable_offset_commit)
    }
    # A crash before the marker: still pending after replay.
    coord = await node.restart()
    assert await fetched(coord, "g", [TP0], stable=True) == {
        TP0: (-1, ErrorCode.unstable_offset_commit)
    }
    await write_marker(node, "g", 42, commit)
    await coord.complete_txn(42, ["g"], commit)
    expected = {TP0: (10 if commit else 1, ErrorCode.none)}
    assert await fetched(coord, "g", [TP0], stable=True) == expected
    coord = await node.restart()
    assert await fetched(coord, "g", [TP0], stable=True) == expected


async def test_txn_offset_commit_checks_member_and_generation(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    leader, _ = await join_two(coord)
    assert await coord.commit_offsets("g", {TP0: oam(1)}, generation_id=1, member_id=leader, producer=TXN) == {
        TP0: ErrorCode.illegal_generation
    }
    assert await coord.commit_offsets("g", {TP0: oam(1)}, generation_id=2, member_id="x", producer=TXN) == {
        TP0: ErrorCode.unknown_member_id
    }
    assert await coord.commit_offsets("g", {TP0: oam(1)}, generation_id=2, member_id=leader, producer=TXN) == {
        TP0: ErrorCode.none
    }
    assert await coord.commit_offsets("", {TP0: oam(1)}, producer=TXN) == {
        TP0: ErrorCode.invalid_group_id
    }


async def test_offsets_of_an_empty_group_expire_and_the_group_goes(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    await commit_then_leave(coord)
    node.clock.now += CONFIG.offsets_retention_ms + CONFIG.offsets_retention_check_interval_ms
    assert await coord.list_groups() == []
    coord = await node.restart()
    assert await coord.list_groups() == []
    assert await fetched(coord, "g", [TP0]) == {TP0: (-1, ErrorCode.none)}


async def test_join_errors(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    assert (await coord.join_group("", params())).error is ErrorCode.invalid_group_id
    assert (await coord.join_group("g", params("ghost"))).error is ErrorCode.unknown_member_id
    assert (await coord.join_group("g", params(session=1))).error is (
        ErrorCode.invalid_session_timeout
    )
    assert await coord.list_groups() == []
    result = await coord.join_group("g", params(require_known=True))
    assert result.error is ErrorCode.member_id_required
    assert (await coord.sync_group("", SyncParams(member_id="m", generation_id=1))).error is (
        ErrorCode.invalid_group_id
    )
    assert (await coord.sync_group("zz", SyncParams(member_id="m", generation_id=1))).error is (
        ErrorCode.unknown_member_id
    )
    assert await coord.leave_group("zz", [("m", None)]) == (
        ErrorCode.none, [ErrorCode.unknown_member_id]
    )


async def test_deleted_topics_lose_their_offsets(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    other = TopicPartition("u", 0)
    await coord.commit_offsets("g", {TP0: oam(1), other: oam(2)})
    await coord.commit_offsets("h", {TP1: oam(3)})
    assert await coord.topics_deleted(["t"]) == 2
    coord = await node.restart()
    assert await fetched(coord, "g", [TP0, other]) == {
        TP0: (-1, ErrorCode.none), other: (2, ErrorCode.none),
    }
    assert await coord.fetch_offsets("h", None) == []


async def test_a_member_gone_during_a_rebalance_is_removed_after_a_restart(node: Node) -> None:
    # Kafka keeps no join or sync phase across a restart: the group comes back as last stored
    # (Stable) with every member on a fresh session, so a member that never returns is removed
    # by its session timeout and the others rebalance without it.
    coord = node.coordinator
    assert coord is not None
    leader, follower = await join_two(coord)
    parked = asyncio.ensure_future(coord.join_group("g", params(follower, client_id="b", protocols=(
        ("range", b"changed"),))))
    while coord.groups["g"].state is not GroupState.PREPARING_REBALANCE:
        await coord.list_groups()
    coord = await node.restart()
    parked.cancel()
    assert coord.groups["g"].state is GroupState.STABLE and len(coord.groups["g"].members) == 2
    node.clock.now += SESSION - 1
    assert await coord.heartbeat("g", member_id=leader, generation_id=2) is ErrorCode.none
    node.clock.now += 1
    assert await coord.heartbeat("g", member_id=leader, generation_id=2) is ErrorCode.rebalance_in_progress
    alone = await coord.join_group("g", params(leader, client_id="a"))
    assert alone.generation_id == 3 and [m.member_id for m in alone.members] == [leader]
