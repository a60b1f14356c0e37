"""InitializeShareGroupState on one broker (coordinator/share/initializer.py): a share-partition is
served only once the group coordinator initialized it, after the heartbeat that first found it
subscribed; before that a ShareFetch gets Kafka's UNKNOWN_SERVER_ERROR "Read operation on
uninitialized share partition not allowed." and an acknowledgement UNKNOWN_TOPIC_OR_PARTITION.
Initialized with no start offset, the share-partition starts where share.auto.offset.reset says
when it is first read, also after a restart. Over a real LogManager."""

from __future__ import annotations

import asyncio

from coordinator.share.coordinator import ShareCoordinator, ShareFetchParams
from coordinator.share.group import HeartbeatResult, ShareHeartbeat
from coordinator.share.partitions import ShareGroupSettings
from coordinator.share.state_log import SharePartitionKey, StoredShareState
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from storage.log_manager import LogManager
from tests.coordinator.share.test_group_records import OFFSETS, _initialized, logs  # noqa: F401 (a fixture)

SETTINGS = ShareGroupSettings(auto_offset_reset="earliest")
ACCEPT = (1,)


async def started(source: LogManager) -> ShareCoordinator:
    coordinator = ShareCoordinator(source, lambda _: SETTINGS, group_log=lambda _: OFFSETS)
    await coordinator.start()
    return coordinator


async def joined(coordinator: ShareCoordinator) -> HeartbeatResult:
    """Member m's join of group g (subscribed to st), once its share-partitions are initialized."""
    result, _ = await coordinator.heartbeat("g", ShareHeartbeat(
        member_id="m", member_epoch=0, rack_id=None, subscribed_topic_names=("st",), client_id="c",
        client_host="/127.0.0.1"))
    await _initialized(coordinator, "g")
    return result


def fetch(source: LogManager, epoch: int, acks: dict[tuple[object, int], object] | None = None) -> ShareFetchParams:
    key = (source.topics["st"].topic_id, 0)
    return ShareFetchParams(group_id="g", member_id="m", epoch=epoch, added={key: TopicPartition("st", 0)},
                            acks=acks or {})  # type: ignore[arg-type]


async def test_a_share_partition_is_served_once_the_group_initialized_it(logs: LogManager) -> None:  # noqa: F811
    await logs.get_log(TopicPartition("st", 0)).append(bytes(build_batch([Record(value=b"v%d" % i) for i in range(3)])))
    coordinator = await started(logs)
    key = (logs.topics["st"].topic_id, 0)
    try:
        refused = await coordinator.share_fetch(fetch(logs, 0))
        assert not refused.fetched
        assert (refused.errors[key].code, refused.errors[key].message) == (
            ErrorCode.unknown_server_error, "Read operation on uninitialized share partition not allowed.")
        acked = await coordinator.share_fetch(fetch(logs, 1, {key: (TopicPartition("st", 0), [(0, 0, ACCEPT)])}))
        assert acked.ack_errors[key] is not None and acked.ack_errors[key].code is ErrorCode.unknown_topic_or_partition
        assert coordinator.manager.stored_state(SharePartitionKey("g", key[0], 0)) is None
        assert (await joined(coordinator)).assignment == {}  # assigned once initialized, from the next heartbeat
        group = coordinator.describe("g")
        assert group is not None
        stored = coordinator.manager.stored_state(SharePartitionKey("g", key[0], 0))
        assert stored == StoredShareState(group.group_epoch, -1, ())  # the group epoch, as Kafka initializes it
    finally:
        await coordinator.stop()
    again = await started(logs)  # the initialized state is durable; its start offset found at the first read
    try:
        got = await again.share_fetch(fetch(logs, 0))
        assert not got.errors
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got.fetched[key].ranges] == [(0, 2, 1)]
    finally:
        await again.stop()


async def test_share_partitions_recorded_initialized_without_a_state_are_initialized_at_start(
        logs: LogManager) -> None:  # noqa: F811
    """As an eosbroker from before this initialization left them: the group records them
    initialized, their state was never written."""
    coordinator = await started(logs)
    try:
        await joined(coordinator)
        keys = [SharePartitionKey("g", logs.topics["st"].topic_id, p) for p in (0, 1)]
        await coordinator.manager.delete(keys)
    finally:
        await coordinator.stop()
    again = await started(logs)
    try:
        for _ in range(500):
            if all(again.manager.stored_state(k) is not None for k in keys):
                break
            await asyncio.sleep(0.01)
        group = again.describe("g")
        assert group is not None
        assert [again.manager.stored_state(k) for k in keys] == [StoredShareState(group.group_epoch, -1, ())] * 2
        got = await again.share_fetch(fetch(logs, 0))
        assert not got.errors
    finally:
        await again.stop()


async def test_a_deleted_topics_share_partition_states_go_with_it(logs: LogManager) -> None:  # noqa: F811
    coordinator = await started(logs)
    try:
        await joined(coordinator)
        topic_id = logs.topics["st"].topic_id
        assert coordinator.group_keys("g") == [SharePartitionKey("g", topic_id, p) for p in (0, 1)]
        await logs.delete_topic("st")
        await coordinator.topics_deleted([topic_id])
        group = coordinator.describe("g")
        assert group is not None and group.initialized == {} and coordinator.group_keys("g") == []
    finally:
        await coordinator.stop()
    again = await started(logs)  # the tombstones and the group's record are durable
    try:
        group = again.describe("g")
        assert group is not None and group.initialized == {} and again.group_keys("g") == []
    finally:
        await again.stop()
