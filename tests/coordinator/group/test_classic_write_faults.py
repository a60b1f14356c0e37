"""A classic group whose record cannot be written: the GroupCoordinator over real partition logs,
with the group's __consumer_offsets partition failing its appends (tests/coordinator/transaction/
faulty_storage.py). The leader's SyncGroup and the follower's parked one get Kafka's error for the
failed append, the group keeps its members and rebalances, and once the log heals the next
generation is written and survives a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.log import CONSUMER_OFFSETS_TOPIC
from coordinator.group.member import SyncGroupResult, SyncParams
from coordinator.group.state import GroupState
from protocol.errors import KafkaError
from storage.api import TopicPartition
from storage.log_manager import LogManager

from ..transaction.faulty_storage import FaultyLogs
from .helpers import params
from .test_group_coordinator import CONFIG, Clock, join_two


async def _start(data_dir: Path, clock: Clock) -> tuple[LogManager, FaultyLogs, GroupCoordinator]:
    logs = LogManager(data_dir, {})
    logs.load()
    logs.start()
    faults = FaultyLogs(logs)
    coord = GroupCoordinator(faults, CONFIG, clock_ms=clock)  # type: ignore[arg-type]
    await coord.start()
    return logs, faults, coord


async def _rejoin_both(coord: GroupCoordinator, leader: str, follower: str, generation: int) -> int:
    joins = await asyncio.gather(coord.join_group("g", params(leader, client_id="a")),
                                 coord.join_group("g", params(follower, client_id="b")))
    assert {j.error for j in joins} == {ErrorCode.none}
    assert joins[0].generation_id == joins[1].generation_id == generation
    return generation


async def _parked_sync(coord: GroupCoordinator, member_id: str, generation: int) -> asyncio.Task[SyncGroupResult]:
    parked = asyncio.ensure_future(coord.sync_group("g", SyncParams(member_id=member_id, generation_id=generation)))
    await asyncio.sleep(0)  # its command is queued before the leader's
    return parked


async def test_a_failed_sync_write_answers_the_error_and_rebalances(tmp_path: Path) -> None:
    clock = Clock()
    logs, faults, coord = await _start(tmp_path, clock)
    leader, follower = await join_two(coord)
    assert await coord.heartbeat("g", member_id=leader, generation_id=2) is ErrorCode.none
    generation = await _rejoin_both(coord, leader, follower, 3)
    tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, coord.partition_for("g").partition)
    faults.break_partition(tp, lambda: KafkaError(ErrorCode.not_enough_replicas))
    parked = await _parked_sync(coord, follower, generation)
    answer = await coord.sync_group("g", SyncParams(member_id=leader, generation_id=generation,
                                                    assignments={leader: b"A2", follower: b"B2"}))
    # Kafka's GroupMetadataManager answers NOT_ENOUGH_REPLICAS on its log as COORDINATOR_NOT_AVAILABLE.
    assert answer.error is ErrorCode.coordinator_not_available
    assert (await parked).error is ErrorCode.coordinator_not_available
    [summary] = await coord.describe_groups(["g"])
    assert summary.state is GroupState.PREPARING_REBALANCE
    assert {m.member_id for m in summary.members} == {leader, follower}
    assert await coord.heartbeat("g", member_id=leader, generation_id=generation) is ErrorCode.rebalance_in_progress

    faults.broken.clear()  # healed: the next generation is written
    generation = await _rejoin_both(coord, leader, follower, generation + 1)
    parked = await _parked_sync(coord, follower, generation)
    answer = await coord.sync_group("g", SyncParams(member_id=leader, generation_id=generation,
                                                    assignments={leader: b"A3", follower: b"B3"}))
    assert answer.assignment == b"A3" and (await parked).assignment == b"B3"
    await coord.stop()
    await logs.close()

    logs, _, coord = await _start(tmp_path, clock)
    [summary] = await coord.describe_groups(["g"])
    assert summary.state is GroupState.STABLE
    assert {m.member_id: m.assignment for m in summary.members} == {leader: b"A3", follower: b"B3"}
    await coord.stop()
    await logs.close()
