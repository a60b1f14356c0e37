"""OffsetCommits queued together in the GroupCoordinator's inbox: one append per __consumer_offsets
partition, each commit still validated alone, answered with its own errors, applied in order and
acknowledged only once its records are in the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.group.log import CONSUMER_OFFSETS_TOPIC, partition_for
from coordinator.group.member import SyncParams
from protocol.record_batch import iter_batches

from .helpers import params
from .test_group_coordinator import CONFIG, TP0, TP1, Clock, Node, fetched, oam

# "g" and "solo" hash to __consumer_offsets-1, "team" to -0, "fresh" to -2.
assert [partition_for(g, 3) for g in ("g", "solo", "team", "fresh")] == [1, 1, 0, 2]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = Node(tmp_path / "data", Clock())
    # Room for one commit of 1,500 bytes of metadata, not two.
    n.log_defaults = {"max.message.bytes": 3_000}
    await n.start()
    yield n
    await n.stop()


def batches(node: Node, partition: int) -> list[tuple[int, int]]:
    """(base offset, record count) of every batch in the partition's segments."""
    found = []
    for segment in sorted((node.data_dir / f"{CONSUMER_OFFSETS_TOPIC}-{partition}").glob("*.log")):
        found += [(h.base_offset, h.records_count) for _, h in iter_batches(segment.read_bytes())]
    return found


async def queued_together(*calls: Awaitable[Any]) -> list[Any]:
    """Run the calls so that all their commands are in the actor's queue before it takes one:
    each task enqueues on its first step, and all of them step before the actor wakes."""
    return await asyncio.gather(*(asyncio.ensure_future(call) for call in calls))


async def test_queued_commits_share_one_append_and_keep_their_own_answers(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    leader = (await coord.join_group("team", params(client_id="a"))).member_id
    await coord.sync_group("team", SyncParams(member_id=leader, generation_id=1, assignments={}))
    before = {p: batches(node, p) for p in range(3)}
    big = "x" * (CONFIG.offset_metadata_max_bytes + 1)
    results = await queued_together(
        coord.commit_offsets("g", {TP0: oam(1), TP1: oam(1)}),
        coord.commit_offsets("g", {TP0: oam(2, big)}),
        coord.commit_offsets("team", {TP0: oam(5)}),  # not a member of a group that has members
        coord.commit_offsets("fresh", {TP0: oam(1)}, member_id="m", generation_id=3),
        coord.commit_offsets("g", {TP0: oam(3)}),
        coord.commit_offsets("team", {TP0: oam(7)}, member_id=leader, generation_id=1),
        coord.commit_offsets("solo", {TP1: oam(9)}),
    )
    assert results == [
        {TP0: ErrorCode.none, TP1: ErrorCode.none},
        {TP0: ErrorCode.offset_metadata_too_large},
        {TP0: ErrorCode.unknown_member_id},
        {TP0: ErrorCode.illegal_generation},
        {TP0: ErrorCode.none},
        {TP0: ErrorCode.none},
        {TP1: ErrorCode.none},
    ]
    # One batch per partition written to, its records in the commands' order.
    [(base, count)] = batches(node, 1)[len(before[1]):]
    assert count == 4
    assert batches(node, 0)[len(before[0]):] == [(batches(node, 0)[-1][0], 1)]
    assert batches(node, 2) == before[2]
    # Each offset knows its own record: the later commit of TP0 wins, in memory and on replay.
    committed = coord.groups["g"].offsets.committed
    assert (committed[TP0].record_offset, committed[TP1].record_offset) == (base + 2, base + 1)
    assert await fetched(coord, "g") == {TP0: (3, ErrorCode.none), TP1: (1, ErrorCode.none)}
    coord = await node.restart()
    assert await fetched(coord, "g") == {TP0: (3, ErrorCode.none), TP1: (1, ErrorCode.none)}
    assert await fetched(coord, "team", [TP0]) == {TP0: (7, ErrorCode.none)}
    assert await fetched(coord, "solo", [TP1]) == {TP1: (9, ErrorCode.none)}


async def test_a_command_between_commits_sees_only_the_commits_before_it(node: Node) -> None:
    coord = node.coordinator
    assert coord is not None
    first, seen, last = await queued_together(
        coord.commit_offsets("g", {TP0: oam(1)}),
        fetched(coord, "g", [TP0]),
        coord.commit_offsets("g", {TP0: oam(2)}),
    )
    assert first == last == {TP0: ErrorCode.none}
    assert seen == {TP0: (1, ErrorCode.none)}
    assert [count for _, count in batches(node, 1)] == [1, 1]
    assert await fetched(coord, "g", [TP0]) == {TP0: (2, ErrorCode.none)}


async def test_commits_too_large_together_are_written_one_by_one(node: Node) -> None:
    """Two commits that fit max.message.bytes alone but not in one batch both succeed; the one too
    large even alone fails with Kafka's INVALID_COMMIT_OFFSET_SIZE, as it would have unbatched."""
    coord = node.coordinator
    assert coord is not None
    results = await queued_together(
        coord.commit_offsets("g", {TP0: oam(1, "a" * 1_500)}),
        coord.commit_offsets("g", {TP1: oam(2, "b" * 3_500)}),
        coord.commit_offsets("solo", {TP0: oam(3, "c" * 1_500)}),
    )
    assert results == [{TP0: ErrorCode.none}, {TP1: ErrorCode.invalid_commit_offset_size}, {TP0: ErrorCode.none}]
    assert [count for _, count in batches(node, 1)] == [1, 1]
    coord = await node.restart()
    assert await fetched(coord, "g") == {TP0: (1, ErrorCode.none), TP1: (-1, ErrorCode.none)}
    assert await fetched(coord, "solo", [TP0]) == {TP0: (3, ErrorCode.none)}
