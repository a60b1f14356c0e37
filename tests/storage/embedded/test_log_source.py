"""EmbeddedLogSource (storage/embedded/log_source.py): two log sources over one data dir standing for
two processes of a set. A partition's log opens only under its lock, so a second leader is refused
while the first holds it; the successor reads everything the first wrote and goes on at the next
offset, also after a crash; topics changed through one are seen by the other; a deleted topic's
directories go, and a topic created again under the name starts empty."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition
from storage.embedded.db import SharedDb
from storage.embedded.log_source import EmbeddedLogSource
from storage.embedded.topic_store import EmbeddedTopicStore
from tests.storage.helpers import crash
from tests.storage.test_partition_log import batch, values

TP = TopicPartition("t", 0)


def source(data_dir: Path) -> EmbeddedLogSource:
    db = SharedDb(data_dir)
    db.open()
    logs = EmbeddedLogSource(EmbeddedTopicStore(db), data_dir, {})
    logs.load()
    logs.start()
    return logs


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[tuple[EmbeddedLogSource, EmbeddedLogSource]]:
    a, b = source(tmp_path), source(tmp_path)
    yield a, b
    for logs in (a, b):
        await logs.close()
        logs.store.db.close()


async def test_one_leader_at_a_time_and_the_next_goes_on_where_it_stopped(two) -> None:
    a, b = two
    await a.create_topic("t", 1)
    assert (await b.lookup_topic("t")) is not None  # created through the other process
    await a.on_elected(TP, 1)
    await a.get_log(TP).append(batch(3))
    with pytest.raises(KafkaError) as refused:
        await b.on_elected(TP, 2)  # a still holds the partition's lock
    assert refused.value.code is ErrorCode.not_leader_or_follower
    with pytest.raises(KafkaError) as not_here:
        b.get_log(TP)
    assert not_here.value.code is ErrorCode.not_leader_or_follower
    await a.on_resigned(TP)
    await b.on_elected(TP, 2)
    info = await b.get_log(TP).append(batch(2, tag=b"b"))
    assert info.base_offset == 3
    assert [o for o, _ in await values(b.get_log(TP))] == [0, 1, 2, 3, 4]


async def test_after_a_crash_the_successor_recovers_and_never_reuses_an_offset(two) -> None:
    a, b = two
    await a.create_topic("t", 1)
    await a.on_elected(TP, 1)
    await a.get_log(TP).append(batch(4))
    crash(a.logs.pop(TP))  # as kill -9 leaves the files; the kernel drops the lock
    a._locks.pop(TP).release()
    await b.on_elected(TP, 2)
    assert b.get_log(TP).log_end_offset == 4
    assert (await b.get_log(TP).append(batch(1))).base_offset == 4


async def test_a_deleted_topic_goes_and_one_created_again_starts_empty(two, tmp_path: Path) -> None:
    a, b = two
    await a.create_topic("t", 2)
    await b.lookup_topic("t")
    await b.on_elected(TP, 1)  # b leads t-0; nobody leads t-1, whose directory exists
    await b.get_log(TP).append(batch(2))
    (tmp_path / "t-1").mkdir()
    fenced: list[TopicPartition] = []
    b.add_fenced_listener(fenced.append)
    await a.delete_topic("t")
    await b.refresh_topics()
    assert fenced == [TP] and b.find_log(TP) is None
    assert not (tmp_path / "t-0").exists() and not (tmp_path / "t-1").exists()
    await a.create_topic("t", 1, {"cleanup.policy": "compact"})
    await b.refresh_topics()
    assert b.topics["t"].configs == {"cleanup.policy": "compact"}
    await b.on_elected(TP, 2)
    assert b.get_log(TP).log_end_offset == 0


async def test_topic_changes_through_one_reach_the_other(two) -> None:
    a, b = two
    await a.create_topic("t", 1)
    await b.lookup_topic("t")
    await b.on_elected(TP, 1)
    await a.alter_configs("t", {"retention.ms": "1000"})
    await a.create_partitions("t", 3)
    await b.refresh_topics()
    assert b.topics["t"].partitions == 3
    assert b.get_log(TP).config.retention_ms == 1000
    with pytest.raises(KafkaError) as exists:
        await b.create_topic("t", 1)
    assert exists.value.code is ErrorCode.topic_already_exists


async def test_a_deleted_topics_directory_left_behind_goes_at_the_next_start(tmp_path: Path) -> None:
    """A leader paused while its topic was deleted, then killed, leaves the directory: the next
    process to start removes it, and keeps the live topic's."""
    a = source(tmp_path)
    try:
        await a.create_topic("live", 1)
        await a.on_elected(TopicPartition("live", 0), 1)
        await a.get_log(TopicPartition("live", 0)).append(batch(1))
        await a.on_resigned(TopicPartition("live", 0))
        orphan = tmp_path / "gone-0"
        orphan.mkdir()
        (orphan / "partition.metadata").write_text("version: 0\ntopic_id: 0b5bd6f1-2c1c-4b5e-9d36-1d0b7e0a9a11\n")
        (orphan / "00000000000000000000.log").write_bytes(b"old")
        b = source(tmp_path)
        await b.close()
        b.store.db.close()
        assert not orphan.exists()
        assert (tmp_path / "live-0" / "00000000000000000000.log").stat().st_size > 0
    finally:
        await a.close()
        a.store.db.close()
