"""Log compaction in cluster mode against a real PostgreSQL: Kafka's key, tombstone and transaction
rules over rows (the local cleaner's rules, storage/cleaner/), the closed-range bound, the
leader-epoch fence, and what a new leader reads and rebuilds after cleaning."""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import asyncpg
import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from storage.api import AppendOrigin, IsolationLevel, TopicPartition
from storage.cleaner.log_cleaner import CleanerConfig
from storage.pg.clean_rows import PgCleanResult, run_pg_clean_pass
from storage.pg.log_cleaner import PgLogCleaner
from storage.pg.log_source import PgLogSource
from storage.pg.partition_log import PgPartitionLog
from tests.storage.cleaner.helpers import end_txn, kv, latest, records
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import take

TP = TopicPartition("t", 0)
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "300", "min.cleanable.dirty.ratio": "0.01"}


async def open_compacted(db: asyncpg.Pool, source: PgLogSource, **configs: str) -> PgPartitionLog:
    await source.create_topic("t", 1, {**COMPACT, **configs})
    return await take(db, source, TP)


async def clean(plog: PgPartitionLog, pg_url: str, now_ms: int = 10_000) -> PgCleanResult | None:
    """One pass as the broker's cleaner runs it (the worker's part on a thread here)."""
    plan = await plog.plan_cleaning(pg_url, now_ms, 1 << 20)
    if plan is None:
        return None
    result = await asyncio.to_thread(run_pg_clean_pass, plan.task)
    if result.committed:
        await plog.cleaned(result)
        return result
    return None


async def rows(db: asyncpg.Pool) -> list[int]:
    return [r["base_offset"] for r in await db.fetch("SELECT base_offset FROM batches ORDER BY base_offset")]


async def write_transactions(plog: PgPartitionLog) -> None:
    """A committed and an aborted transaction, a plain record, then the aborted producer goes on."""
    await plog.append(kv(b"a", b"committed", pid=1, epoch=0, seq=0, txn=True))  # 0
    await plog.append(kv(b"a", b"aborted", pid=2, epoch=0, seq=0, txn=True))  # 1
    await plog.append(end_txn(1, commit=True), AppendOrigin.COORDINATOR)  # 2
    await plog.append(end_txn(2, commit=False), AppendOrigin.COORDINATOR)  # 3
    await plog.append(kv(b"b", b"plain"))  # 4
    await plog.append(kv(b"c", b"next", pid=2, epoch=0, seq=1, txn=True))  # 5: producer 2 goes on
    await plog.append(end_txn(2, commit=True), AppendOrigin.COORDINATOR)  # 6


async def dirt(plog: PgPartitionLog, tag: bytes) -> None:
    """Twelve more keys: enough dirty bytes for a pass."""
    for i in range(12):
        await plog.append(kv(b"f%d" % i, tag + b"%d" % i))


async def test_latest_value_of_each_key_stays_at_its_offset_and_the_active_range_is_untouched(
    db, source, source_factory: SourceFactory, pg_url
) -> None:
    plog = await open_compacted(db, source)
    writes = []
    for i in range(60):
        key = b"k%d" % (i % 7)
        info = await plog.append(kv(key, b"v%d" % i))
        writes.append((info.base_offset, key, b"v%d" % i))
    before = await db.fetchval("SELECT sum(octet_length(data)) FROM batches")
    result = await clean(plog, pg_url)
    assert result is not None and result.committed
    end = result.end_offset
    want = latest([w for w in writes if w[0] < end])
    expect = sorted([(o, k, v) for k, (o, v) in want.items()] + [w for w in writes if w[0] >= end])
    assert 50 < end < 60  # the active range rolls at segment.bytes (300): its newest batches stay
    assert await records(plog) == expect
    assert await db.fetchval("SELECT sum(octet_length(data)) FROM batches") < before
    assert plog.size_bytes == await db.fetchval("SELECT sum(octet_length(data)) FROM batches")
    assert await db.fetchval("SELECT cleaner_checkpoint FROM partitions") == end == plog.first_dirty_offset
    assert plog.high_watermark == 60
    successor = await take(db, await source_factory(2), TP)  # reads from the database only
    assert await records(successor) == expect
    assert successor.first_dirty_offset == end
    # a new leader starts a new active range: what the old one's was is closed now
    assert (await clean(successor, pg_url)).end_offset == 60
    assert await records(successor) == sorted((o, k, v) for k, (o, v) in latest(writes).items())
    assert await clean(successor, pg_url) is None


async def test_reads_inside_a_gap_start_at_the_next_kept_batch(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(30):
        await plog.append(kv(b"a", b"%d" % i))
    await plog.append(kv(b"b", b"last"))
    for i in range(6):
        await plog.append(kv(b"c%d" % i, b"x" * 30))
    assert (await clean(plog, pg_url)).committed
    kept = await rows(db)
    assert 0 not in kept and 29 in kept
    for level in IsolationLevel:
        info = await plog.read(3, 1 << 20, level)
        assert [h.base_offset for _, h in iter_batches(info.records[0])] == [29]


async def test_tombstones_stay_delete_retention_ms_after_cleaning_then_go(db, source, pg_url) -> None:
    plog = await open_compacted(db, source, **{"delete.retention.ms": "1000"})
    for i in range(10):
        await plog.append(kv(b"a", b"%d" % i))
    await plog.append(kv(b"a", None))
    for i in range(20):
        await plog.append(kv(b"b%d" % i, b"x" * 20))
    assert (await clean(plog, pg_url, now_ms=10_000)).committed
    assert [r for r in await records(plog) if r[1] == b"a"] == [(10, b"a", None)]
    for i in range(10):
        await plog.append(kv(b"b%d" % i, b"y" * 20))
    assert (await clean(plog, pg_url, now_ms=10_500)).committed  # within delete.retention.ms
    assert [r for r in await records(plog) if r[1] == b"a"] == [(10, b"a", None)]
    for i in range(10):
        await plog.append(kv(b"b%d" % i, b"z" * 20))
    assert (await clean(plog, pg_url, now_ms=11_001)).committed
    assert [r for r in await records(plog) if r[1] == b"a"] == []


async def test_aborted_records_go_and_markers_and_the_aborted_index_stay_consistent(
    db, source, source_factory: SourceFactory, pg_url
) -> None:
    plog = await open_compacted(db, source, **{"delete.retention.ms": "1000"})
    await write_transactions(plog)
    await dirt(plog, b"filler")
    assert (1, b"a", b"aborted") not in await records(plog, IsolationLevel.READ_COMMITTED)
    assert await db.fetchval("SELECT count(*) FROM aborted_txns") == 1
    assert (await clean(plog, pg_url, now_ms=10_000)).committed
    for level in IsolationLevel:
        got = await records(plog, level)
        assert (0, b"a", b"committed") in got and (4, b"b", b"plain") in got and (5, b"c", b"next") in got
        assert all(r[2] != b"aborted" for r in got)
    assert 1 not in await rows(db)
    # its batch was read in this pass: the ABORT marker and its index entry stay for now
    assert await db.fetchval("SELECT count(*) FROM aborted_txns") == 1
    await dirt(plog, b"again")
    assert (await clean(plog, pg_url, now_ms=10_500)).committed
    # no data of the aborted transaction is left: the index entry goes (database and memory) and
    # the marker waits delete.retention.ms
    assert await db.fetchval("SELECT count(*) FROM aborted_txns") == 0
    assert (await plog.read(0, 1 << 20, IsolationLevel.READ_COMMITTED)).aborted_transactions == []
    assert 3 in await rows(db)
    await dirt(plog, b"more")
    assert (await clean(plog, pg_url, now_ms=11_501)).committed
    assert 3 not in await rows(db)
    successor = await take(db, await source_factory(2), TP)
    for level in IsolationLevel:
        assert await records(successor, level) == await records(plog, level)
    assert successor.last_stable_offset == successor.high_watermark


async def test_open_transactions_and_the_section_after_them_are_never_cleaned(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(5):
        await plog.append(kv(b"a", b"old%d" % i))
    await plog.append(kv(b"a", b"open", pid=7, epoch=0, seq=0, txn=True))  # 5: stays open
    for i in range(20):
        await plog.append(kv(b"a", b"later%d" % i))
    assert plog.last_stable_offset == 5
    result = await clean(plog, pg_url)
    assert result is not None and result.end_offset <= 5
    assert set(range(5, 26)) <= set(await rows(db))
    assert [r for r in await records(plog) if r[0] < 5] == [(4, b"a", b"old4")]


async def test_a_live_producers_last_batch_is_kept_empty_and_it_may_go_on(
    db, source, source_factory: SourceFactory, pg_url
) -> None:
    plog = await open_compacted(db, source)
    await plog.append(kv(b"a", b"p0", pid=5, epoch=0, seq=0))
    await plog.append(kv(b"a", b"p1", pid=5, epoch=0, seq=1))  # 1: producer 5's last batch
    for i in range(20):
        await plog.append(kv(b"a", b"plain%d" % i))
    assert (await clean(plog, pg_url)).committed
    assert 0 not in await rows(db)
    [data] = (await plog.read(1, 1 << 20)).records[:1]
    [(_, header)] = list(iter_batches(data))[:1]
    assert (header.base_offset, header.records_count, header.producer_id, header.base_sequence) == (1, 0, 5, 1)
    successor = await take(db, await source_factory(2), TP)
    info = await successor.append(kv(b"z", b"p2", pid=5, epoch=0, seq=2))  # in sequence: accepted
    assert info.base_offset == 22
    with pytest.raises(KafkaError) as err:
        await successor.append(kv(b"z", b"p9", pid=5, epoch=0, seq=9))
    assert err.value.code is ErrorCode.out_of_order_sequence_number


async def test_a_deposed_leaders_pass_commits_nothing(db, source, source_factory: SourceFactory, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"a", b"%d" % i))
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    assert plan is not None
    before = await db.fetch("SELECT base_offset, data FROM batches ORDER BY base_offset")
    await take(db, await source_factory(2), TP)  # a new epoch: the pass's fence fails
    result = await asyncio.to_thread(run_pg_clean_pass, plan.task)
    assert not result.committed and result.rows_deleted == 0
    assert await db.fetch("SELECT base_offset, data FROM batches ORDER BY base_offset") == before
    assert await db.fetchval("SELECT cleaner_checkpoint FROM partitions") == 0


async def test_a_pass_commits_only_over_a_range_a_producer_snapshot_covers(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"a", b"%d" % i))
    assert await db.fetchval("SELECT count(*) FROM producer_snapshots") == 0
    result = await clean(plog, pg_url)
    assert result.committed
    assert await db.fetchval("SELECT max(end_offset) FROM producer_snapshots") >= result.end_offset
    for i in range(40):
        await plog.append(kv(b"a", b"again%d" % i))
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    await db.execute("DELETE FROM producer_snapshots")  # (a snapshot whose write was lost)
    result = await asyncio.to_thread(run_pg_clean_pass, plan.task)
    assert not result.committed


async def test_the_active_range_rolls_at_segment_ms(db, source, pg_url) -> None:
    plog = await open_compacted(db, source, **{"segment.bytes": "100000", "segment.ms": "1"})
    for i in range(10):
        await plog.append(kv(b"a", b"%d" % i))
        await asyncio.sleep(0.002)  # each append comes segment.ms after the range's first: it rolls
    assert (await clean(plog, pg_url)).end_offset == 9
    assert await records(plog) == [(8, b"a", b"8"), (9, b"a", b"9")]


async def test_min_compaction_lag_keeps_recent_rows_and_max_lag_forces_a_pass(db, source, pg_url) -> None:
    plog = await open_compacted(db, source, **{"min.compaction.lag.ms": "5000", "min.cleanable.dirty.ratio": "0.99",
                                               "max.compaction.lag.ms": "3000"})
    for i in range(20):
        await plog.append(kv(b"a", b"%d" % i, ts=1000 + (i // 10) * 10_000))  # 0-9 at 1000, 10-19 at 11000
    assert await clean(plog, pg_url, now_ms=2000) is None  # the ratio is not reached, nothing overdue
    result = await clean(plog, pg_url, now_ms=12_000)  # first dirty batch waited 11 s > max lag
    assert result is not None and result.end_offset == 10  # rows newer than 5 s ago are uncleanable
    assert [r[0] for r in await records(plog)] == [9, *range(10, 20)]


async def test_a_ratio_of_one_holds_the_cleaner_off_a_partition_all_dirty(db, source, pg_url) -> None:
    # as Kafka: cleanable above min.cleanable.dirty.ratio, not at it
    plog = await open_compacted(db, source, **{"min.cleanable.dirty.ratio": "1.0"})
    for i in range(20):
        await plog.append(kv(b"a", b"%d" % i, ts=1000 + i))
    assert await clean(plog, pg_url, now_ms=60_000) is None


async def test_the_cleaner_cleans_the_partitions_led_here_in_a_worker(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    cleaner = PgLogCleaner(source, pg_url, CleanerConfig(backoff_ms=10, dedupe_buffer_size=1 << 20),
                           executor=lambda: ThreadPoolExecutor(1))
    stats = await cleaner.clean_dirtiest()
    assert stats is not None and stats.bytes_written < stats.bytes_read
    assert stats.dirty_ratio_after < stats.dirty_ratio_before
    assert cleaner.stats.passes == 1
    assert await cleaner.clean_dirtiest() is None
    await cleaner.stop()


async def test_a_corrupt_row_makes_the_partition_uncleanable_and_changes_nothing(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    # one byte of a stored record flipped: its CRC no longer holds
    await db.execute("UPDATE batches SET data = set_byte(data, 70, get_byte(data, 70) # 1) WHERE base_offset = 5")
    before = await db.fetch("SELECT base_offset, data FROM batches ORDER BY base_offset")
    cleaner = PgLogCleaner(source, pg_url, CleanerConfig(backoff_ms=10, dedupe_buffer_size=1 << 20),
                           executor=lambda: ThreadPoolExecutor(1))
    assert await cleaner.clean_dirtiest() is None
    assert cleaner.uncleanable == {"t-0"} and cleaner.stats.failures == 1
    assert await db.fetch("SELECT base_offset, data FROM batches ORDER BY base_offset") == before
    await cleaner.stop()


async def test_a_database_the_worker_cannot_reach_is_retried_later(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"k%d" % (i % 3), b"%d" % i))
    cleaner = PgLogCleaner(source, "postgresql://postgres@127.0.0.1:1/none",
                           CleanerConfig(backoff_ms=10, dedupe_buffer_size=1 << 20),
                           executor=lambda: ThreadPoolExecutor(1))
    assert await cleaner.clean_dirtiest() is None
    assert cleaner.stats.failures == 1 and not cleaner.uncleanable
    cleaner.url = pg_url  # reachable again
    assert await cleaner.clean_dirtiest() is not None
    await cleaner.stop()


async def test_appends_and_reads_go_on_while_a_pass_runs(db, source, pg_url) -> None:
    plog = await open_compacted(db, source)
    writes = []
    for i in range(200):
        info = await plog.append(kv(b"k%d" % (i % 5), b"%d" % i))
        writes.append((info.base_offset, b"k%d" % (i % 5), b"%d" % i))
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    running = asyncio.ensure_future(asyncio.to_thread(run_pg_clean_pass, plan.task))
    appended = 0
    while not running.done() or appended < 20:
        info = await plog.append(kv(b"new%d" % appended, b"x"))
        writes.append((info.base_offset, b"new%d" % appended, b"x"))
        assert (await plog.read(info.base_offset, 1 << 20)).records
        appended += 1
    result = await running
    assert result.committed
    await plog.cleaned(result)
    end = result.end_offset
    want = latest([w for w in writes if w[0] < end])
    expect = sorted([(o, k, v) for k, (o, v) in want.items()] + [w for w in writes if w[0] >= end])
    for level in IsolationLevel:
        assert await records(plog, level) == expect


async def test_a_pass_whose_database_never_answers_fails_after_one_lease(db, source, pg_url) -> None:
    """The worker's own connection is given up after cluster.lease.ms, as the broker's pool's are, not
    after asyncpg's 60 s: behind a dead route (here a port that completes the TCP handshake and never
    answers) the pass fails and the cleaner tries again after its backoff."""
    plog = await open_compacted(db, source)
    for i in range(40):
        await plog.append(kv(b"a", b"%d" % i))
    plan = await plog.plan_cleaning(pg_url, 10_000, 1 << 20)
    assert plan is not None
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        task = replace(plan.task, url=f"postgresql://eos@127.0.0.1:{silent.getsockname()[1]}/eos", lease_s=0.5)
        run = asyncio.ensure_future(asyncio.to_thread(run_pg_clean_pass, task))
        done, _ = await asyncio.wait({run}, timeout=20)
    assert done and isinstance(run.exception(), TimeoutError)
