"""The group coordinator sharded by __consumer_offsets partitions (docs/cluster.md): two
coordinators over one LogManager stand for two brokers over one database. Only the shard's leader
serves its groups; the one that loses the shard answers NOT_COORDINATOR (parked joins too), and
the next leader replays the same records, so the group and its committed offsets survive."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.config import GroupConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.log import CONSUMER_OFFSETS_TOPIC
from coordinator.group.member import SyncParams
from coordinator.group.offsets import OffsetAndMetadata
from protocol.errors import KafkaError
from storage.api import TopicPartition
from storage.log_manager import LogManager

from ..cluster_view import StaticClusterView
from .helpers import params

TP0 = TopicPartition("t", 0)
CONFIG = GroupConfig(initial_rebalance_delay_ms=0, offsets_topic_num_partitions=3)


@pytest.fixture
async def logs(tmp_path: Path):  # type: ignore[no-untyped-def]
    manager = LogManager(tmp_path, {})
    manager.load()
    manager.start()
    yield manager
    await manager.close()


async def started(logs: LogManager, node_id: int) -> GroupCoordinator:
    coordinator = GroupCoordinator(logs, CONFIG, cluster=StaticClusterView(node_id))
    await coordinator.start()
    return coordinator


async def elect(coordinator: GroupCoordinator, group_id: str, epoch: int) -> TopicPartition:
    shard = coordinator.partition_for(group_id)
    await coordinator.on_elected(shard, epoch)
    await coordinator.shards.wait_loaded(shard.partition)
    return shard


async def expect(code: ErrorCode, coro) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as info:
        await coro
    assert info.value.code is code, info.value


async def test_groups_and_offsets_move_with_their_shard(logs: LogManager) -> None:
    first, second = await started(logs, 1), await started(logs, 2)
    try:
        assert logs.topics[CONSUMER_OFFSETS_TOPIC].partitions == 3  # created once, found by the other
        await expect(ErrorCode.not_coordinator, first.fetch_offsets("g", [TP0]))
        shard = await elect(first, "g", 1)
        member = await first.join_group("g", params(client_id="a"))
        await first.sync_group("g", SyncParams(member_id=member.member_id, generation_id=member.generation_id,
                                               assignments={}))
        done = await first.commit_offsets("g", {TP0: OffsetAndMetadata(committed_offset=42)},
                                          member_id=member.member_id, generation_id=member.generation_id)
        assert done == {TP0: ErrorCode.none}
        await expect(ErrorCode.not_coordinator, second.fetch_offsets("g", [TP0]))
        parked = asyncio.ensure_future(first.join_group("g", params(client_id="b")))
        await first.heartbeat("g", member_id=member.member_id, generation_id=member.generation_id)
        await first.on_resigned(shard)
        await expect(ErrorCode.not_coordinator, parked)
        await expect(ErrorCode.not_coordinator, first.heartbeat("g", member_id=member.member_id, generation_id=1))
        await elect(second, "g", 2)
        [offset] = await second.fetch_offsets("g", [TP0])
        assert (offset.committed_offset, offset.error) == (42, ErrorCode.none)
        [summary] = await second.describe_groups(["g"])
        assert [m.member_id for m in summary.members] == [member.member_id]
    finally:
        await first.stop()
        await second.stop()


async def test_a_loading_shard_answers_load_in_progress(logs: LogManager) -> None:
    coordinator = await started(logs, 1)
    try:
        shard = coordinator.partition_for("g")
        await coordinator.on_elected(shard, 1)
        await expect(ErrorCode.coordinator_load_in_progress, coordinator.fetch_offsets("g", [TP0]))
        await coordinator.shards.wait_loaded(shard.partition)
        assert await coordinator.list_groups() == []
    finally:
        await coordinator.stop()


async def test_a_shard_whose_log_still_opens_after_the_election_answers_load_in_progress(logs: LogManager) -> None:
    """The other brokers name this one the shard's leader as soon as it takes the lease, before its
    log is open and the coordinator hears of the election: an OffsetFetch then is told to retry
    (librdkafka's committed() gives up on NOT_COORDINATOR, and retries this)."""
    view = StaticClusterView(1)
    coordinator = GroupCoordinator(logs, CONFIG, cluster=view)
    await coordinator.start()
    try:
        shard = coordinator.partition_for("g")
        view.opening.add(shard)
        await expect(ErrorCode.coordinator_load_in_progress, coordinator.fetch_offsets("g", [TP0]))
        view.opening.discard(shard)  # handed back (the log would not open): not ours after all
        await expect(ErrorCode.not_coordinator, coordinator.fetch_offsets("g", [TP0]))
    finally:
        await coordinator.stop()
