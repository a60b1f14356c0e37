"""Share groups persisted in __consumer_offsets (coordinator/share/group_store.py): the records have
Kafka 4.4's layouts (ShareGroup*Key/Value, types 10-15), a change writes only what differs, and a
share coordinator started again over the same logs has the group back with its members, its
epochs and its initialized share-partitions; a deleted group stays deleted. The group
coordinator's loader skips these records. Over a real LogManager."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from coordinator.group.config import GroupConfig
from coordinator.group.loader import PartitionLoader
from coordinator.group.metadata import GroupMetadata
from coordinator.share.coordinator import ShareCoordinator
from coordinator.share.group import ShareGroup, ShareHeartbeat, ShareMember
from coordinator.share.group_records import RecordKey, decode_key, group_records, share_group
from coordinator.share.partitions import ShareGroupSettings
from coordinator.share.state_log import SharePartitionKey
from protocol.records import read_records
from storage.api import TopicPartition
from storage.log_manager import LogManager

OFFSETS = TopicPartition("__consumer_offsets", 0)


def test_keys_are_kafkas_and_values_round_trip() -> None:
    assert RecordKey(10, "g", "m").encode() == b"\x00\x0a\x00\x01g\x00\x01m"
    assert RecordKey(11, "g").encode() == b"\x00\x0b\x00\x01g"
    assert decode_key(b"\x00\x0f\x00\x01g") == RecordKey(15, "g")
    for bad in (b"\x00\x01\x00\x01g", b"\x00\x0a\x00\x01g", b"\x00\x0b\x00\x05g"):
        with pytest.raises(ValueError):
            decode_key(bad)
    t = uuid.UUID(int=7)
    group = ShareGroup("g", group_epoch=4, assignment_epoch=4, initialized={t: 3},
                       initializing={uuid.UUID(int=8): (2, 5000)})
    group.members["m"] = ShareMember(member_id="m", member_epoch=4, rack_id=None, client_id="c", client_host="/h",
                                     subscribed_topic_names=("a", "b"), assignment={t: frozenset({0, 2})})
    group.target["m"] = {t: frozenset({0, 2})}
    records = group_records(group, {t: "a"})
    # ShareGroupMetadataValue v0: Epoch 4, MetadataHash 0, no tagged fields
    assert records[RecordKey(11, "g")] == b"\x00\x00" + b"\x00\x00\x00\x04" + bytes(8) + b"\x00"
    back = share_group("g", records)
    assert back is not None
    assert (back.group_epoch, back.assignment_epoch, back.initialized) == (4, 4, {t: 3})
    assert back.initializing == {uuid.UUID(int=8): (2, 0)}  # since unknown: the next heartbeat initializes it
    assert back.members == {"m": ShareMember(member_id="m", member_epoch=4, client_id="c", client_host="/h",
                                             subscribed_topic_names=("a", "b"), assignment={t: frozenset({0, 2})})}
    assert back.target == group.target
    assert share_group("g", {k: v for k, v in records.items() if k.record_type != 11}) is None


def _hb(member: str, epoch: int) -> ShareHeartbeat:
    return ShareHeartbeat(member_id=member, member_epoch=epoch, rack_id=None, subscribed_topic_names=("st",),
                          client_id="c", client_host="/127.0.0.1")


def _share_coordinator(logs: LogManager) -> ShareCoordinator:
    return ShareCoordinator(logs, lambda _: ShareGroupSettings(), group_log=lambda _: OFFSETS)


async def _records(logs: LogManager) -> list[tuple[bytes | None, bytes | None]]:
    plog = logs.get_log(OFFSETS)
    data = b"".join(bytes(r) for r in (await plog.read(0, 1 << 20)).records)
    return [(r.key, r.value) for _, records in read_records(data) for r in records]


async def _initialized(coordinator: ShareCoordinator, group_id: str) -> None:
    """Until the heartbeat's InitializeShareGroupState (a background task) is done."""
    for _ in range(500):
        group = coordinator.describe(group_id)
        if group is not None and group.initialized and not group.initializing:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"share group {group_id} not initialized")


@pytest.fixture
async def logs(tmp_path: Path):  # type: ignore[no-untyped-def]
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("__consumer_offsets", 1)
    await logs.create_topic("st", 2)
    yield logs
    await logs.close()


async def test_a_group_comes_back_after_a_restart_and_a_deleted_one_does_not(logs: LogManager) -> None:
    first = _share_coordinator(logs)
    await first.start()
    try:
        result, _ = await first.heartbeat("g", _hb("m1", 0))  # its share-partitions are initialized after the answer
        await _initialized(first, "g")
        result, _ = await first.heartbeat("g", _hb("m1", result.member_epoch))
        assert result.assignment == {logs.topics["st"].topic_id: frozenset({0, 1})}
        written = len(await _records(logs))
        await first.heartbeat("g", _hb("m1", result.member_epoch))  # nothing changed: nothing written
        assert len(await _records(logs)) == written
    finally:
        await first.stop()
    topic_id = logs.topics["st"].topic_id
    again = _share_coordinator(logs)
    await again.start()
    try:
        group = again.describe("g")
        assert group is not None and group.state == "Stable" and group.initialized == {topic_id: 2}
        assert group.members["m1"].assignment == {topic_id: frozenset({0, 1})}
        assert again.persisted.keys(group) == [SharePartitionKey("g", topic_id, p) for p in (0, 1)]
        # the member carries on at its epoch without joining again
        result, _ = await again.heartbeat("g", _hb("m1", group.members["m1"].member_epoch))
        assert result.member_epoch == group.members["m1"].member_epoch
        await again.heartbeat("g", _hb("m1", -1))
        assert again.list_groups() == [("g", "Empty")]
        await again.delete_group("g")
    finally:
        await again.stop()
    third = _share_coordinator(logs)
    await third.start()
    try:
        assert third.list_groups() == []
    finally:
        await third.stop()


async def test_the_group_coordinator_skips_share_group_records(logs: LogManager) -> None:
    share = _share_coordinator(logs)
    await share.start()
    try:
        await share.heartbeat("g", _hb("m1", 0))
    finally:
        await share.stop()
    assert {key[:2] for key, _ in await _records(logs) if key is not None} >= {b"\x00\x0a", b"\x00\x0b"}
    groups: dict[str, GroupMetadata] = {}
    assert await PartitionLoader(groups, GroupConfig(), 0).load(logs.get_log(OFFSETS)) > 0
    assert groups == {}
