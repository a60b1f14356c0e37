"""Archiving over the real S3 server: the runs of many small flushes rewritten into one object per
partition, switched in one fenced transaction, the old objects deleted only a grace period after
no run reads them, and reads that started before the switch still served."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import asyncpg

from storage.api import AppendOrigin, TopicPartition
from storage.object_store import ObjectStore
from storage.pg.log_source import PgLogSource
from storage.pg.object_archive import ArchivedPartition, ArchiveSettings, archive_partition, plan_archive
from storage.pg.object_gc import collect_garbage
from storage.pg.object_runs import Run
from storage.pg.partition_log import PgPartitionLog
from tests.storage.objects.conftest import TP, StoreWrapper
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, take, values

SMALL = ArchiveSettings(target_bytes=1 << 20, min_runs=4, interval_ms=100)


def _runs(*sizes: int) -> list[Run]:
    return [Run(10 * i, 10 * i + 9, 0, f"flush/{i}", 0, size) for i, size in enumerate(sizes)]


def test_groups_are_consecutive_small_runs_rewritten_at_min_runs_or_when_full() -> None:
    settings = ArchiveSettings(target_bytes=100, min_runs=3)
    assert plan_archive(_runs(10, 10), settings) == []  # too few, and room for more
    assert [[r.base_offset for r in g] for g in plan_archive(_runs(10, 10, 10), settings)] == [[0, 10, 20]]
    # A run of a quarter of the target or more (an archive) splits groups; a group that the next run
    # would overflow is full.
    groups = plan_archive(_runs(10, 10, 100, 20, 24, 24, 24, 20, 5), settings)
    assert [[r.base_offset for r in g] for g in groups] == [[30, 40, 50, 60]]  # [70, 80] has room and too few
    assert plan_archive(_runs(100, 100), settings) == []


def test_groups_never_hold_runs_on_both_sides_of_the_cleaners_checkpoint() -> None:
    settings = ArchiveSettings(target_bytes=100, min_runs=3)
    groups = plan_archive(_runs(10, 10, 10, 10, 10, 10, 10), settings, checkpoint=30)
    assert [[r.base_offset for r in g] for g in groups] == [[0, 10, 20], [30, 40, 50, 60]]
    assert plan_archive(_runs(10, 10, 10, 10), settings, checkpoint=20) == []  # two and two: too few each


def test_archives_of_a_quarter_of_the_target_are_not_merged_again() -> None:
    """Merging them would copy a quarter of the target or more to save one row: each byte of a busy
    partition is stored twice (its flush, then one archive), not once more per merge."""
    settings = ArchiveSettings(target_bytes=100, min_runs=3)
    assert plan_archive(_runs(40, 40, 10, 10), settings) == []  # 40 + 40 + 10 + 10 would fit the target
    assert plan_archive(_runs(25, 25, 25, 25), settings) == []
    groups = plan_archive(_runs(30, 24, 24, 24, 24, 40), settings)
    assert [[r.base_offset for r in g] for g in groups] == [[10, 20, 30, 40]]


async def _stored(store: ObjectStore) -> set[str]:
    return {i.key async for chunk in store.list() for i in chunk if not i.key.startswith("probe/")}


async def _two_partitions(source: PgLogSource, db: asyncpg.Pool) -> tuple[PgPartitionLog, PgPartitionLog]:
    await source.create_topic("t", 2)
    logs = await take(db, source, TP), await take(db, source, TopicPartition("t", 1))
    for i in range(12):  # each round one flush holding a run of each partition
        await asyncio.gather(*(plog.append(batch(3, tag=b"%d-" % i)) for plog in logs))
    return logs


def _part(plog: PgPartitionLog) -> ArchivedPartition:
    return ArchivedPartition(plog.topic_id, plog.tp.partition, plog.leader_epoch)


async def _age(db: asyncpg.Pool) -> None:
    await db.execute("UPDATE flush_objects SET created_at = created_at - interval '2 hours', "
                     "unreferenced_since = unreferenced_since - interval '2 hours'")


async def test_small_runs_become_one_object_per_partition_and_old_objects_go_after_the_grace(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    source = await source_factory(1)
    p0, p1 = await _two_partitions(source, db)
    expected = [await values(p) for p in (p0, p1)]
    flushes = await _stored(s3_store)
    assert await archive_partition(source.pool, s3_store, _part(p0), 1, SMALL) == 12
    rows = await db.fetch("SELECT partition, base_offset, last_offset, object_key, byte_start, byte_length "
                          "FROM batch_runs ORDER BY partition, base_offset")
    mine = [r for r in rows if r["partition"] == 0]
    assert len(mine) == 1 and mine[0]["object_key"].startswith("archive/")
    assert (mine[0]["base_offset"], mine[0]["last_offset"], mine[0]["byte_start"]) == (0, 35, 0)
    assert mine[0]["byte_length"] == p0.size_bytes
    assert len(rows) == 13  # partition 1 untouched: its runs still read the flush objects
    now = int(time.time() * 1000)
    assert await collect_garbage(source.pool, s3_store, 3_600_000, now) == (0, 0)  # marked, not yet due
    await _age(db)
    assert await collect_garbage(source.pool, s3_store, 3_600_000, now) == (0, 0)  # partition 1 reads them all
    assert await archive_partition(source.pool, s3_store, _part(p1), 1, SMALL) == 12
    assert await collect_garbage(source.pool, s3_store, 3_600_000, now) == (0, 0)  # only marked now
    await _age(db)
    assert await collect_garbage(source.pool, s3_store, 3_600_000, now) == (12, 0)
    assert (await _stored(s3_store)).isdisjoint(flushes)
    successor = await source_factory(2)  # empty caches: every read is a GET of an archive
    for p, want in zip((0, 1), expected, strict=True):
        plog = await take(db, successor, TopicPartition("t", p))
        assert await values(plog) == want
    assert successor.reader.gets == 2  # one object per partition, read sequentially


async def test_a_deposed_leader_archives_nothing_and_its_object_is_an_orphan(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    source = await source_factory(1)
    p0, _ = await _two_partitions(source, db)
    before = await db.fetch("SELECT * FROM batch_runs ORDER BY partition, base_offset")
    stored = await _stored(s3_store)
    await db.execute("UPDATE partitions SET leader = 2, leader_epoch = leader_epoch + 1 WHERE partition = 0")
    assert await archive_partition(source.pool, s3_store, _part(p0), 1, SMALL) == 0
    assert await db.fetch("SELECT * FROM batch_runs ORDER BY partition, base_offset") == before
    orphans = await _stored(s3_store) - stored
    assert len(orphans) == 1 and next(iter(orphans)).startswith("archive/")
    assert await collect_garbage(source.pool, s3_store, 3_600_000, int(time.time() * 1000) + 7_200_000) == (0, 1)
    assert await _stored(s3_store) == stored


class _SwitchOnFirstGet(StoreWrapper):
    """The real store; the first GET first lets archiving switch the rows and the collector delete
    the old objects (as if the fetch had been slower than the grace period)."""

    def __init__(self, store: ObjectStore, switch: Callable[[], Awaitable[None]]) -> None:
        super().__init__(store)
        self.switch = switch
        self.switched = False

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        if not self.switched:
            self.switched = True
            await self.switch()
        return await self.store.get_range(key, start, end)


async def test_a_fetch_that_read_the_rows_before_the_switch_is_served(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    writer = await source_factory(1)
    p0, p1 = await _two_partitions(writer, db)
    expected = await values(p0)

    async def switch() -> None:  # during the successor's load, which reads the runs
        for plog in (p0, p1):
            epoch = await db.fetchval("SELECT leader_epoch FROM partitions WHERE partition = $1", plog.tp.partition)
            part = ArchivedPartition(plog.topic_id, plog.tp.partition, epoch)
            assert await archive_partition(writer.pool, s3_store, part, 2, SMALL) == 12
        now = int(time.time() * 1000)
        await collect_garbage(writer.pool, s3_store, 3_600_000, now)
        await _age(db)
        assert (await collect_garbage(writer.pool, s3_store, 3_600_000, now))[0] == 12

    store = _SwitchOnFirstGet(s3_store, switch)
    reader = await source_factory(2, object_store=store)
    await db.execute("UPDATE partitions SET leader = 2, leader_epoch = leader_epoch + 1 WHERE partition = 1")
    successor = await take(db, reader, TP)  # reads go to the store: its first GET is of a deleted object
    assert await values(successor) == expected
    assert store.switched


async def test_the_broker_archives_the_partitions_it_leads_in_the_background(
    source_factory: SourceFactory, db: asyncpg.Pool
) -> None:
    source = await source_factory(1, archive=SMALL)
    p0, p1 = await _two_partitions(source, db)
    expected = [await values(p) for p in (p0, p1)]
    most = "SELECT max(n) FROM (SELECT count(*) AS n FROM batch_runs GROUP BY partition) c"
    while await db.fetchval(most) >= SMALL.min_runs:  # bounded: fewer than min.runs rows per partition
        await asyncio.sleep(0.05)
    assert await db.fetchval("SELECT count(*) FROM batch_runs WHERE object_key LIKE 'archive/%'") >= 2
    assert [await values(p) for p in (p0, p1)] == expected


async def test_runs_held_in_their_rows_are_archived_into_an_object(
    source_factory: SourceFactory, source: PgLogSource, plog: PgPartitionLog, s3_store: ObjectStore,
    db: asyncpg.Pool
) -> None:
    """The broker's own records flushed alone stay in their rows (no object) until archived."""
    for i in range(4):
        await plog.append(batch(1, tag=b"%d-" % i), AppendOrigin.COORDINATOR)
    assert await db.fetchval("SELECT count(*) FROM batch_runs WHERE object_key = '' AND data IS NOT NULL") == 4
    assert await archive_partition(source.pool, s3_store, _part(plog), 1, SMALL) == 4
    runs = await db.fetch("SELECT object_key, data FROM batch_runs")
    assert len(runs) == 1 and runs[0]["object_key"].startswith("archive/") and runs[0]["data"] is None
    successor = await take(db, await source_factory(2), TP)
    assert [v for _, v in await values(successor)] == [b"0-0", b"1-0", b"2-0", b"3-0"]
