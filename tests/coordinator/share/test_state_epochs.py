"""State epochs of share-partition state in cluster mode: AlterShareGroupOffsets initializes a
share-partition at its share coordinator one state epoch on (InitializeShareGroupState), and the
share coordinator refuses a write or an initialization at an older state epoch with
FENCED_STATE_EPOCH, as Kafka's ShareCoordinatorShard does; the share-partition leader that still
held the older state stops serving it (NOT_LEADER_OR_FOLLOWER) and, read again, starts at the
altered offset. ReadShareGroupStateSummary answers a key with no state as Kafka does. Over a real
LogManager."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from coordinator.share.admin import ClusterShareAdmin, ShareStateSummary, Summary
from coordinator.share.partition_state import RecordState, StateBatch
from coordinator.share.state_log import SharePartitionKey, StoredShareState, delivery_complete_count
from coordinator.share.state_shards import check_state_epoch
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.share.test_leader_epochs import (
    ACCEPT,
    TP,
    TP_ID,
    Coordinator,
    coordinator,
    fenced,
    key_of,
    leaders,
)

__all__ = ("coordinator",)  # the fixture, used by name


@pytest.mark.parametrize(("recorded", "requested", "fenced_"), [(None, 0, False), (2, 2, False), (2, 3, False),
                                                               (2, 1, True)])
def test_only_a_state_epoch_below_the_recorded_one_is_fenced(recorded: int | None, requested: int,
                                                             fenced_: bool) -> None:
    key = SharePartitionKey("g", TP_ID, 0)
    stored = None if recorded is None else StoredShareState(recorded, 0, ())
    if not fenced_:
        check_state_epoch(key, stored, requested)
        return
    with pytest.raises(KafkaError) as e:
        check_state_epoch(key, stored, requested)
    assert e.value.code is ErrorCode.fenced_state_epoch


def test_delivery_complete_counts_acknowledged_and_archived_offsets_from_the_start() -> None:
    stored = StoredShareState(0, 5, (StateBatch(3, 6, RecordState.ACKNOWLEDGED, 1),
                                     StateBatch(7, 7, RecordState.AVAILABLE, 1),
                                     StateBatch(8, 9, RecordState.ARCHIVED, 5)))
    assert delivery_complete_count(stored) == 2 + 2  # 5-6 and 8-9


class LocalAdmin:
    """The share coordinator's administrative calls made directly (as broker/share_state_admin.py
    does for the keys whose shard this broker leads)."""

    def __init__(self, c: Coordinator) -> None:
        self.c = c

    async def summaries(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, Summary]:
        out: dict[SharePartitionKey, Summary] = {}
        for key in keys:
            stored = self.c.shards.summary(key)
            out[key] = ShareStateSummary.of(stored) if stored is not None else None
        return out

    async def initialize(self, states: Mapping[SharePartitionKey, tuple[int, int]],
                         ) -> dict[SharePartitionKey, KafkaError | None]:
        out: dict[SharePartitionKey, KafkaError | None] = {}
        for key, (epoch, start) in states.items():
            try:
                await self.c.shards.initialize(key, epoch, start)
                out[key] = None
            except KafkaError as exc:
                out[key] = exc
        return out

    async def delete(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, KafkaError | None]:
        for key in keys:
            await self.c.shards.write(key, None)
        return dict.fromkeys(keys)


async def test_an_altered_share_partition_fences_its_leader_which_reads_it_again(coordinator: Coordinator) -> None:
    leader, _ = leaders(coordinator)
    key = key_of(coordinator)
    admin = ClusterShareAdmin(coordinator.logs, LocalAdmin(coordinator))
    assert await admin.initialize([key], 0, -1) == {key: None}  # first assigned: the leader starts at earliest
    partition = await leader.partition(key, TP)
    got = await leader.acquire(partition, "m", 10, 1 << 20, True)
    await leader.acknowledge(partition, "m", [(0, 1, ACCEPT)])  # written at state epoch 0
    assert (await admin.states("g")) == {key: ShareStateSummary(0, 1, 2, 0)}
    assert [(r.first_offset, r.last_offset) for r in got.ranges] == [(0, 3)]
    # the group is empty again; its offsets go back to 1 (kafka-share-groups --reset-offsets)
    assert await admin.alter({key: 1}) == {key: None}
    assert coordinator.shards.summary(key) == StoredShareState(1, 1, (), 1)
    # the leader still holds the old state: its next write is fenced, it drops the share-partition
    with pytest.raises(KafkaError) as e:
        await leader.acknowledge(partition, "m", [(2, 3, ACCEPT)])
    assert e.value.code is ErrorCode.not_leader_or_follower
    assert key not in leader.partitions
    again = await leader.partition(key, TP)
    assert (again.state_epoch, again.state.start_offset) == (1, 1)
    redelivered = await leader.acquire(again, "m2", 10, 1 << 20, True)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in redelivered.ranges] == [(1, 3, 1)]
    # an initialization below the recorded state epoch is refused
    assert await fenced(coordinator.shards.initialize(key, 0, 0)) is ErrorCode.fenced_state_epoch
    # deleting the state leaves nothing to describe
    assert await admin.delete(list(await admin.states("g"))) == {key: None}
    assert await admin.states("g") == {}
    assert not await admin.has_state("g")
