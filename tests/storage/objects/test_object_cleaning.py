"""Log compaction of object-stored partitions over the real S3 server: the cleaner's rules (keys,
transactions, its fence) applied to the batches of the runs, the cleaned section written into new
objects and switched in one transaction, and the old objects collected once no run reads them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import asyncpg
import pytest

from storage.api import IsolationLevel
from storage.cleaner.log_cleaner import CleanerConfig
from storage.object_store import ObjectStore, ObjectStoreSettings
from storage.pg.clean_rows import PgCleanResult
from storage.pg.cleaning import dirty_bytes
from storage.pg.log_cleaner import PgLogCleaner
from storage.pg.log_source import PgLogSource
from storage.pg.object_archive import ArchiveSettings, archive_partition
from storage.pg.object_clean import run_object_clean_pass
from storage.pg.object_gc import collect_garbage
from storage.pg.partition_log import PgPartitionLog
from tests.s3_server import REGION, S3Server
from tests.storage.cleaner.helpers import kv, latest, records
from tests.storage.objects.conftest import TP
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import take
from tests.storage.pg.test_pg_cleaning import dirt, open_compacted, write_transactions


@pytest.fixture
def settings(s3_server: S3Server, s3_bucket: str) -> ObjectStoreSettings:
    return ObjectStoreSettings(s3_server.url(s3_bucket), s3_server.endpoint, REGION)


async def clean(plog: PgPartitionLog, pg_url: str, settings: ObjectStoreSettings,
                now_ms: int = 10_000) -> PgCleanResult | None:
    """One pass as the broker's cleaner runs it (the worker's part on a thread here)."""
    plan = await plog.plan_cleaning(pg_url, now_ms, 1 << 20)
    if plan is None:
        return None
    result = await asyncio.to_thread(run_object_clean_pass, replace(plan.task, objects=settings))
    if result.committed:
        await plog.cleaned(result)
    return result


async def _keys(store: ObjectStore) -> set[str]:
    return {i.key async for chunk in store.list() for i in chunk if not i.key.startswith("probe/")}


async def test_latest_value_of_each_key_stays_and_old_objects_go_once_unread(
    db: asyncpg.Pool, source: PgLogSource, source_factory: SourceFactory, pg_url: str,
    settings: ObjectStoreSettings, s3_store: ObjectStore,
) -> None:
    plog = await open_compacted(db, source)
    writes = []
    for i in range(60):
        key = b"k%d" % (i % 7)
        info = await plog.append(kv(key, b"v%d" % i))
        writes.append((info.base_offset, key, b"v%d" % i))
    before = await db.fetchval("SELECT sum(byte_length) FROM batch_runs")
    flushed = await _keys(s3_store)
    result = await clean(plog, pg_url, settings)
    assert result is not None and result.committed
    end = result.end_offset
    want = latest([w for w in writes if w[0] < end])
    expect = sorted([(o, k, v) for k, (o, v) in want.items()] + [w for w in writes if w[0] >= end])
    assert 50 < end < 60  # the active range rolls at segment.bytes (300): its newest batches stay
    assert await records(plog) == expect
    assert plog.size_bytes == await db.fetchval("SELECT sum(byte_length) FROM batch_runs") < before
    assert await db.fetchval("SELECT cleaner_checkpoint FROM partitions WHERE partition = 0") == end
    assert await db.fetchval("SELECT count(*) FROM batch_runs WHERE object_key LIKE 'archive/%'") == 1
    successor = await take(db, await source_factory(2), TP)  # reads from the store only
    assert await records(successor) == expect
    now = int(time.time() * 1000)
    await collect_garbage(source.pool, s3_store, 3_600_000, now)  # marks the objects no run reads
    await db.execute("UPDATE flush_objects SET unreferenced_since = now() - interval '2 hours'")
    deleted, _ = await collect_garbage(source.pool, s3_store, 3_600_000, now)
    assert deleted > 40 and len(flushed - await _keys(s3_store)) == deleted
    assert await records(await take(db, await source_factory(3), TP)) == expect


async def test_aborted_records_go_and_markers_and_the_aborted_index_stay_consistent(
    db: asyncpg.Pool, source: PgLogSource, source_factory: SourceFactory, pg_url: str,
    settings: ObjectStoreSettings,
) -> None:
    plog = await open_compacted(db, source, **{"delete.retention.ms": "1000"})
    await write_transactions(plog)
    await dirt(plog, b"filler")
    assert (await clean(plog, pg_url, settings, now_ms=10_000)).committed
    for level in IsolationLevel:
        got = await records(plog, level)
        assert (0, b"a", b"committed") in got and (4, b"b", b"plain") in got and (5, b"c", b"next") in got
        assert all(r[2] != b"aborted" for r in got)
    await dirt(plog, b"again")
    assert (await clean(plog, pg_url, settings, now_ms=10_500)).committed
    assert await db.fetchval("SELECT count(*) FROM aborted_txns") == 0  # no data of it left
    assert (await plog.read(0, 1 << 20, IsolationLevel.READ_COMMITTED)).aborted_transactions == []
    successor = await take(db, await source_factory(2), TP)
    for level in IsolationLevel:
        assert await records(successor, level) == await records(plog, level)
    assert successor.last_stable_offset == successor.high_watermark


async def test_a_deposed_leaders_pass_commits_nothing_and_leaves_orphans(
    db: asyncpg.Pool, source: PgLogSource, source_factory: SourceFactory, pg_url: str,
    settings: ObjectStoreSettings, s3_store: ObjectStore,
) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"a", b"%d" % i))
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    assert plan is not None
    before = await db.fetch("SELECT * FROM batch_runs ORDER BY base_offset")
    stored = await _keys(s3_store)
    await take(db, await source_factory(2), TP)  # a new epoch: the pass's fence fails
    result = await asyncio.to_thread(run_object_clean_pass, replace(plan.task, objects=settings))
    assert not result.committed
    assert await db.fetch("SELECT * FROM batch_runs ORDER BY base_offset") == before
    assert await db.fetchval("SELECT cleaner_checkpoint FROM partitions WHERE partition = 0") == 0
    orphans = await _keys(s3_store) - stored
    assert len(orphans) == 1
    later = int(time.time() * 1000) + 7_200_000
    assert await collect_garbage(source.pool, s3_store, 3_600_000, later) == (0, 1)


async def test_the_cleaner_cleans_object_stored_partitions_led_here_in_a_worker(
    db: asyncpg.Pool, source: PgLogSource, pg_url: str, settings: ObjectStoreSettings,
) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    cleaner = PgLogCleaner(source, pg_url, CleanerConfig(backoff_ms=10, dedupe_buffer_size=1 << 20),
                           executor=lambda: ThreadPoolExecutor(1), objects=settings)
    stats = await cleaner.clean_dirtiest()
    assert stats is not None and stats.bytes_written < stats.bytes_read
    assert stats.dirty_ratio_after < stats.dirty_ratio_before
    assert await cleaner.clean_dirtiest() is None
    await cleaner.stop()
    got = await records(plog)
    cleaned = [k for o, k, _ in got if o < plog.first_dirty_offset]
    assert 0 < len(cleaned) == len(set(cleaned)) and len(got) < 40  # one record per key in the cleaned section
    assert {k: v for _, k, v in got} == {b"k0": b"39", b"k1": b"37", b"k2": b"38"}


async def test_a_pass_that_removes_nothing_stores_nothing_and_output_is_cut_at_the_archive_size(
    db: asyncpg.Pool, source: PgLogSource, pg_url: str, settings: ObjectStoreSettings, s3_store: ObjectStore,
) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"k%d" % i, b"%d" % i))  # every key once: nothing to remove
    before = await db.fetch("SELECT * FROM batch_runs ORDER BY base_offset")
    stored = await _keys(s3_store)
    result = await clean(plog, pg_url, settings)
    assert result is not None and result.committed and result.bytes_removed == 0
    assert await db.fetch("SELECT * FROM batch_runs ORDER BY base_offset") == before
    assert await _keys(s3_store) == stored
    writes = [(o, k, v) for o, k, v in await records(plog)]
    for i in range(40):  # now the first 40 are superseded
        info = await plog.append(kv(b"k%d" % i, b"again%d" % i))
        writes.append((info.base_offset, b"k%d" % i, b"again%d" % i))
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    assert plan is not None
    task = replace(plan.task, objects=settings, object_bytes=4 * len(kv(b"k10", b"again10")))
    result = await asyncio.to_thread(run_object_clean_pass, task)
    assert result.committed
    await plog.cleaned(result)
    sizes = [r["byte_length"] for r in await db.fetch(
        "SELECT byte_length FROM batch_runs WHERE object_key LIKE 'archive/%' ORDER BY base_offset")]
    assert len(sizes) > 2 and all(s <= task.object_bytes + len(kv(b"k10", b"again10")) for s in sizes)
    want = latest([w for w in writes if w[0] < result.end_offset])
    assert await records(plog) == sorted([(o, k, v) for k, (o, v) in want.items()]
                                         + [w for w in writes if w[0] >= result.end_offset])


class _HeldExecutor(Executor):
    """The cleaner's worker, on a thread, holding each pass until released."""

    def __init__(self) -> None:
        self.submitted, self.release = threading.Event(), threading.Event()
        self._pool = ThreadPoolExecutor(1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted.set()

        def held() -> Any:
            self.release.wait(30)
            return fn(*args, **kwargs)
        return self._pool.submit(held)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait, cancel_futures=cancel_futures)


async def test_archiving_leaves_a_partition_alone_while_this_brokers_cleaner_passes_over_it(
    db: asyncpg.Pool, source: PgLogSource, pg_url: str, settings: ObjectStoreSettings, s3_store: ObjectStore,
) -> None:
    """A pass replaces the runs it read only if they are still as read: archiving them meanwhile
    voided it, and under steady writes (new small runs for every archiving round) a pass slower than
    the archiving interval seldom if ever committed. Archiving waits for the pass instead."""
    plog = await open_compacted(db, source)
    for i in range(40):  # a flush each: 40 small runs, enough for archiving's groups
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    worker = _HeldExecutor()
    cleaner = PgLogCleaner(source, pg_url, CleanerConfig(backoff_ms=10, dedupe_buffer_size=1 << 20),
                           executor=lambda: worker, objects=settings)
    passing = asyncio.ensure_future(cleaner.clean_dirtiest())
    while not worker.submitted.is_set():  # the pass is in flight
        await asyncio.sleep(0.01)
    [part] = source.archived()
    assert await archive_partition(source.pool, s3_store, part, 1, ArchiveSettings(1 << 20, min_runs=4)) == 0
    worker.release.set()
    stats = await passing
    await cleaner.stop()
    assert stats is not None and stats.bytes_written < stats.bytes_read  # the pass committed
    assert {k: v for _, k, v in await records(plog)} == {b"k0": b"39", b"k1": b"37", b"k2": b"38"}


async def test_archiving_keeps_the_cleaned_section_apart_from_the_dirty_runs(
    db: asyncpg.Pool, source: PgLogSource, pg_url: str, settings: ObjectStoreSettings, s3_store: ObjectStore,
) -> None:
    """The cleaner counts a run's bytes as clean or dirty by where it starts: archiving that merged
    the cleaned section with the dirty runs after it made them all count as clean, the dirty ratio
    read about 0, and the partition was not cleaned again while the archive grew with every round
    (__consumer_offsets under steady commits). The dirty runs are archived apart instead."""
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    first = await clean(plog, pg_url, settings)
    assert first is not None and first.committed
    for i in range(40, 80):  # dirty runs after the checkpoint
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    [part] = source.archived()
    assert await archive_partition(source.pool, s3_store, part, 1, ArchiveSettings(1 << 20, min_runs=4)) > 0
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    assert plan is not None and plan.dirty_ratio > 0.5, plan
    second = await clean(plog, pg_url, settings)
    assert second is not None and second.committed
    assert {k: v for _, k, v in await records(plog)} == {b"k0": b"78", b"k1": b"79", b"k2": b"77"}


async def test_a_run_holding_offsets_on_both_sides_of_the_checkpoint_counts_as_both(
    db: asyncpg.Pool, source: PgLogSource,
) -> None:
    """A run is split in proportion to its offsets: an archive merged across the checkpoint before
    archiving kept to one side (or a pass's output carrying the batches past its section) counted
    as clean whole, and the partition's dirty ratio read about 0."""
    await open_compacted(db, source)
    topic_id = await db.fetchval("SELECT topic_id FROM topics WHERE name = 't'")
    await db.execute("INSERT INTO batch_runs (topic_id, partition, base_offset, last_offset, max_timestamp, "
                     "object_key, byte_start, byte_length) VALUES ($1, 0, 0, 99, 0, 'archive/x', 0, 1000)", topic_id)
    assert await dirty_bytes(db, topic_id, 0, 50, 100, objects=True) == (500, 500)
    assert await dirty_bytes(db, topic_id, 0, 50, 80, objects=True) == (500, 300)  # up to the first uncleanable
    assert await dirty_bytes(db, topic_id, 0, 0, 100, objects=True) == (0, 1000)
