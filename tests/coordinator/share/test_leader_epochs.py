"""Leader-epoch fencing of share-partition state in cluster mode: the share coordinator
(coordinator/share/state_shards.py) records the highest leader epoch of each share-partition in its
state records and refuses an older leader's read or write with FENCED_LEADER_EPOCH, as Kafka's
ShareCoordinatorShard does; the share-partition leader that gets the refusal stops serving the
share-partition and answers NOT_LEADER_OR_FOLLOWER. Over a real LogManager."""

from __future__ import annotations

import dataclasses
import struct
import uuid
from pathlib import Path

import pytest

from coordinator.share.partition_state import AcknowledgeType, RecordState, StateBatch
from coordinator.share.partitions import ShareGroupSettings, SharePartitionManager
from coordinator.share.state_log import SharePartitionKey, StoredShareState, decode_value, encode_value
from coordinator.share.state_shards import ShareStateShards, check_leader_epoch
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from storage.log_manager import LogManager

TP, TP_ID = TopicPartition("st", 0), uuid.UUID(int=5)
ACCEPT = (int(AcknowledgeType.ACCEPT),)
STATE = StoredShareState(0, 0, (StateBatch(0, 1, RecordState.ACKNOWLEDGED, 1),), leader_epoch=3)


@pytest.mark.parametrize(("recorded", "requested", "fenced"), [
    (None, -1, False), (None, 0, False), (3, 3, False), (3, 4, False), (3, 2, True), (0, -1, True), (-1, -1, False),
])
def test_only_a_leader_epoch_below_the_recorded_one_is_fenced(recorded: int | None, requested: int,
                                                              fenced: bool) -> None:
    key = SharePartitionKey("g", TP_ID, 0)
    if not fenced:
        check_leader_epoch(key, recorded, requested)
        return
    with pytest.raises(KafkaError) as e:
        check_leader_epoch(key, recorded, requested)
    assert e.value.code is ErrorCode.fenced_leader_epoch
    assert f"leader epoch {requested} of share-partition {key} is smaller than the last recorded" in e.value.message


def test_the_state_record_carries_the_leader_epoch_and_old_records_read_as_unknown() -> None:
    assert decode_value(encode_value(STATE)) == STATE
    version0 = struct.pack(">hiqi", 0, 2, 7, 1) + struct.pack(">qqbh", 7, 9, int(RecordState.ARCHIVED), 1)
    assert decode_value(version0) == StoredShareState(2, 7, (StateBatch(7, 9, RecordState.ARCHIVED, 1),), -1)


class Coordinator:
    """The share coordinator of one __share_group_state partition, as a ShareStateStore (what
    broker/share_state_client.py calls directly when this broker leads the key's shard)."""

    def __init__(self, logs: LogManager) -> None:
        self.logs = logs
        self.shards = ShareStateShards(logs, 1)
        self.epoch = 0

    async def elect(self) -> None:
        self.epoch += 1
        await self.shards.log.ensure_topic()
        tp = TopicPartition("__share_group_state", 0)
        await self.shards.on_resigned(tp)
        await self.shards.on_elected(tp, self.epoch)
        await self.shards.shards.wait_loaded(0)

    async def load(self) -> dict[SharePartitionKey, StoredShareState]:
        return {}

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> StoredShareState | None:
        return await self.shards.read(key, leader_epoch)

    async def write(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        await self.shards.write(key, state)


@pytest.fixture
async def coordinator(tmp_path: Path):  # type: ignore[no-untyped-def]
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("st", 1)
    await logs.get_log(TP).append(bytes(build_batch([Record(value=b"v%d" % i) for i in range(4)])))
    c = Coordinator(logs)
    await c.elect()
    yield c
    await logs.close()


def key_of(c: Coordinator) -> SharePartitionKey:
    return SharePartitionKey("g", c.logs.topics["st"].topic_id, 0)


async def fenced(call: object) -> ErrorCode:
    with pytest.raises(KafkaError) as e:
        await call  # type: ignore[misc]
    return e.value.code


async def test_the_coordinator_refuses_older_leaders_and_keeps_the_epoch_across_a_reload(
        coordinator: Coordinator) -> None:
    key = key_of(coordinator)
    await coordinator.shards.initialize(key, 0, -1)
    await coordinator.write(key, STATE)
    stale = StoredShareState(0, 0, (), leader_epoch=2)
    assert await fenced(coordinator.write(key, stale)) is ErrorCode.fenced_leader_epoch
    assert await fenced(coordinator.read(key, 1)) is ErrorCode.fenced_leader_epoch
    assert await coordinator.read(key, 3) == STATE
    # a newer leader's read is recorded, durably: the epoch-4 leader is fenced after a reload too
    assert await coordinator.read(key, 5) == dataclasses.replace(STATE, leader_epoch=5)
    await coordinator.elect()
    assert await fenced(coordinator.write(key, dataclasses.replace(STATE, leader_epoch=4))) is \
        ErrorCode.fenced_leader_epoch
    assert await coordinator.read(key, 5) == dataclasses.replace(STATE, leader_epoch=5)


def leaders(coordinator: Coordinator) -> tuple[SharePartitionManager, SharePartitionManager]:
    """The share-partitions of st-0's old leader (leader epoch 1, paused) and of its new one (2)."""
    settings = ShareGroupSettings(auto_offset_reset="earliest")
    old, new = (SharePartitionManager(coordinator.logs, coordinator, lambda _: settings, lambda: 1000)
                for _ in range(2))
    old.leader_epochs[TP], new.leader_epochs[TP] = 1, 2
    return old, new


async def test_a_fenced_leader_drops_the_share_partition_and_does_not_acknowledge(coordinator: Coordinator) -> None:
    old, new = leaders(coordinator)
    key = key_of(coordinator)
    await coordinator.shards.initialize(key, 0, -1)
    partition = await old.partition(key, TP)
    await old.acknowledge(partition, "m", [])  # persisted at leader epoch 1
    assert [(r.first_offset, r.last_offset) for r in (await old.acquire(partition, "m", 10, 1 << 20, True)).ranges] \
        == [(0, 3)]
    # the partition's new leader takes the share-partition over (a paused old leader goes on)
    assert (await new.partition(key, TP)).state.start_offset == 0
    with pytest.raises(KafkaError) as e:
        await old.acknowledge(partition, "m", [(0, 3, ACCEPT)])
    assert e.value.code is ErrorCode.not_leader_or_follower
    assert key not in old.partitions
    assert await fenced(old.partition(key, TP)) is ErrorCode.not_leader_or_follower
    # nothing acknowledged at the old leader is in the state: the new leader delivers all four
    stored = await coordinator.read(key, 2)
    assert stored is not None and (stored.start_offset, stored.leader_epoch) == (0, 2)
    assert all(b.state is not RecordState.ACKNOWLEDGED for b in stored.batches)
    got = await new.acquire(await new.partition(key, TP), "n", 10, 1 << 20, True)
    assert [(r.first_offset, r.last_offset) for r in got.ranges] == [(0, 3)]


async def test_a_member_leaving_a_fenced_leader_is_released_without_a_write(coordinator: Coordinator) -> None:
    old, new = leaders(coordinator)
    key = key_of(coordinator)
    await coordinator.shards.initialize(key, 0, -1)
    await old.acquire(await old.partition(key, TP), "m", 10, 1 << 20, True)
    await new.partition(key, TP)
    assert await old.release_member("g", "m") == 4  # released in memory; the write is fenced
    assert key not in old.partitions
    # the new leader's read recorded its epoch, so the old leader wrote nothing
    assert await coordinator.read(key, 2) == StoredShareState(0, -1, (), leader_epoch=2)


async def test_a_share_partition_never_initialized_is_neither_read_nor_written(coordinator: Coordinator) -> None:
    key = key_of(coordinator)
    for call, message in ((coordinator.read(key, 1), "Read operation on uninitialized share partition not allowed."),
                          (coordinator.write(key, STATE),
                           "Write operation on uninitialized share partition not allowed.")):
        with pytest.raises(KafkaError) as e:
            await call  # type: ignore[misc]
        assert (e.value.code, e.value.message) == (ErrorCode.invalid_request, message)
    leader, _ = leaders(coordinator)
    with pytest.raises(KafkaError) as e:  # as Kafka's SharePartition maps the refusal
        await leader.partition(key, TP)
    assert (e.value.code, e.value.message) == (ErrorCode.unknown_server_error,
                                               "Read operation on uninitialized share partition not allowed.")
    # initialized with no start offset: the leader starts where share.auto.offset.reset says
    await coordinator.shards.initialize(key, 3, -1)
    partition = await leader.partition(key, TP)
    assert (partition.state_epoch, partition.state.start_offset) == (3, 0)
