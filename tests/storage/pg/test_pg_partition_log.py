"""PgPartitionLog against a real PostgreSQL: fenced appends with group commit, reads of the stored
bytes, lookups by timestamp, and a new leader rebuilding producer state, LSO and aborted index."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from storage.api import AppendOrigin, IsolationLevel, TopicPartition
from storage.pg.log_source import PgLogSource
from storage.producer_snapshot import decode_snapshot
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, marker, take, values

TP = TopicPartition("t", 0)


@pytest.fixture
async def plog(source: PgLogSource, db: asyncpg.Pool):
    await source.create_topic("t", 3)
    return await take(db, source, TP)


async def test_appends_get_offsets_in_order_and_reads_serve_the_stored_batches(plog, db) -> None:
    first = await plog.append(batch(3))
    second = await plog.append(batch(2, tag=b"w"))
    assert (first.base_offset, first.last_offset, second.base_offset, second.last_offset) == (0, 2, 3, 4)
    assert (plog.log_start_offset, plog.high_watermark, plog.last_stable_offset) == (0, 5, 5)
    assert await values(plog) == [(0, b"v0"), (1, b"v1"), (2, b"v2"), (3, b"w0"), (4, b"w1")]
    rows = await db.fetch("SELECT base_offset, last_offset, max_timestamp FROM batches ORDER BY base_offset")
    assert [tuple(r) for r in rows] == [(0, 2, 1002), (3, 4, 1001)]
    assert await db.fetchval("SELECT next_offset FROM partitions WHERE partition = 0") == 5


async def test_each_batch_carries_its_offset_and_the_leader_epoch(plog) -> None:
    await plog.append(batch(2) + batch(1))
    info = await plog.read(0, 1 << 20)
    headers = [h for _, h in iter_batches(b"".join(info.records))]
    assert plog.leader_epoch == 1
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 1), (2, 1)]


async def test_reads_from_the_database_span_more_rows_than_one_query_fetches(
    plog, source_factory: SourceFactory, db
) -> None:
    for _ in range(100):
        await plog.append(batch(3))
    successor = await take(db, await source_factory(2), TP)  # nothing cached: every read is a query
    one = len(batch(3))
    for log in (plog, successor):
        info = await log.read(4, 90 * one)
        assert len(info.records) == 90
        assert [h.base_offset for data in info.records for _, h in iter_batches(data)] == list(range(3, 273, 3))
        [(_, header)] = list(iter_batches((await log.read(299, 1)).records[0]))
        assert (header.base_offset, header.last_offset) == (297, 299)


async def test_concurrent_appends_to_many_partitions_share_statements(source, db) -> None:
    await source.create_topic("t", 3)
    logs = [await take(db, source, TopicPartition("t", p)) for p in range(3)]
    infos = await asyncio.gather(*(plog.append(batch(1, tag=b"%d-" % i)) for i in range(60) for plog in logs))
    for plog in logs:
        assert plog.high_watermark == 60
        assert [o for o, _ in await values(plog)] == list(range(60))
    assert len(infos) == 180
    assert source.committer.statements < 180  # grouped: fewer commits than appends
    assert await db.fetchval("SELECT count(*) FROM batches") == 180


async def test_a_fenced_leader_writes_nothing_and_drops_the_partition(plog, source, db) -> None:
    dropped: list[TopicPartition] = []
    source.add_fenced_listener(dropped.append)
    await plog.append(batch(2))
    await db.execute("UPDATE partitions SET leader = 2, leader_epoch = leader_epoch + 1 WHERE partition = 0")
    with pytest.raises(KafkaError) as err:
        await plog.append(batch(1))
    assert err.value.code is ErrorCode.not_leader_or_follower
    assert dropped == [TP]
    with pytest.raises(KafkaError) as err:
        source.get_log(TP)
    assert err.value.code is ErrorCode.not_leader_or_follower
    assert await db.fetchval("SELECT count(*) FROM batches") == 1
    assert await db.fetchval("SELECT next_offset FROM partitions WHERE partition = 0") == 2


async def test_open_partition_refuses_a_partition_another_broker_leads(source, db) -> None:
    await source.create_topic("t", 1)
    await db.execute("UPDATE partitions SET leader = 2, leader_epoch = 4")
    with pytest.raises(KafkaError) as err:
        await source.open_partition(TP, 4)
    assert err.value.code is ErrorCode.not_leader_or_follower
    assert source.find_log(TP) is None


async def test_lookups_by_timestamp(plog) -> None:
    await plog.append(batch(3, ts=1000))  # offsets 0-2, timestamps 1000-1002
    await plog.append(batch(3, ts=5000))  # offsets 3-5
    await plog.append(batch(1, ts=2000))  # offset 6
    assert await plog.offset_for_timestamp(1001) == (1, 1001)
    assert await plog.offset_for_timestamp(1003) == (3, 5000)
    assert await plog.offset_for_timestamp(9999) is None
    assert await plog.offset_for_max_timestamp() == (5, 5002)


async def test_a_new_leader_rebuilds_producer_state_and_deduplicates_retries(
    plog, source_factory: SourceFactory, db
) -> None:
    first = await plog.append(batch(2, pid=7, epoch=0, seq=0))
    await plog.append(batch(1, pid=7, epoch=0, seq=2))
    other = await source_factory(2)
    successor = await take(db, other, TP)
    assert successor.high_watermark == 3
    retry = await successor.append(batch(2, pid=7, epoch=0, seq=0))
    assert (retry.base_offset, retry.last_offset, retry.duplicate) == (first.base_offset, first.last_offset, True)
    with pytest.raises(KafkaError) as err:
        await successor.append(batch(1, pid=7, epoch=0, seq=9))
    assert err.value.code is ErrorCode.out_of_order_sequence_number
    assert (await successor.append(batch(1, pid=7, epoch=0, seq=3))).base_offset == 3


async def test_read_committed_across_a_failover(plog, source_factory: SourceFactory, db) -> None:
    await plog.append(batch(2, tag=b"a", pid=1, epoch=0, seq=0, txn=True))  # 0-1, aborted below
    await plog.append(batch(1, tag=b"b", pid=2, epoch=0, seq=0, txn=True))  # 2, still open
    await plog.append(marker(1, commit=False), AppendOrigin.COORDINATOR)  # 3
    await plog.append(batch(1, tag=b"c"))  # 4
    assert plog.last_stable_offset == 2
    other = await source_factory(2)
    successor = await take(db, other, TP)
    assert (successor.high_watermark, successor.last_stable_offset) == (5, 2)
    assert [t.producer_id for t in successor.open_transactions()] == [2]
    await successor.append(marker(2, commit=True), AppendOrigin.COORDINATOR)  # 5
    assert successor.last_stable_offset == 6
    info = await successor.read(0, 1 << 20, IsolationLevel.READ_COMMITTED)
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in info.aborted_transactions] == [(1, 0, 3)]
    assert info.last_stable_offset == 6


async def test_snapshots_are_stored_and_bound_the_replay(source_factory: SourceFactory, db) -> None:
    source = await source_factory(1, snapshot_interval_bytes=1)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    for seq in range(5):
        await plog.append(batch(1, pid=3, epoch=0, seq=seq))
    assert await db.fetchval("SELECT array_agg(end_offset) FROM producer_snapshots") == [5]
    successor = await take(db, await source_factory(2), TP)
    assert (await successor.append(batch(1, pid=3, epoch=0, seq=4))).duplicate


async def test_snapshots_follow_the_number_of_batches_too(source_factory: SourceFactory, db) -> None:
    source = await source_factory(1, snapshot_interval_batches=3)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    for seq in range(7):
        await plog.append(batch(1, pid=3, epoch=0, seq=seq))
    assert await db.fetchval("SELECT array_agg(end_offset) FROM producer_snapshots") == [6]


async def test_delete_records_and_retention_delete_rows(plog, db) -> None:
    for i in range(5):
        await plog.append(batch(2, ts=1000 * (i + 1)))  # batches at 0, 2, 4, 6, 8
    assert await plog.delete_records_before(3) == 3
    assert await db.fetchval("SELECT min(base_offset) FROM batches") == 2  # the batch holding 3 stays
    assert await plog.read(3, 100)
    with pytest.raises(KafkaError):
        await plog.read(2, 100)
    await plog.update_config(plog.config.__class__(retention_ms=10_000))
    assert await plog.enforce_retention(now_ms=10_000 + 4001) == 6  # batches with max ts < 5001 go
    assert await db.fetchval("SELECT log_start_offset FROM partitions WHERE partition = 0") == 6
    assert await db.fetchval("SELECT count(*) FROM batches") == 2
    assert plog.size_bytes == 2 * len(batch(2))


async def test_appends_in_flight_when_the_log_closes_are_answered(plog, db) -> None:
    async with db.acquire() as conn, conn.transaction():
        await conn.execute("SELECT * FROM partitions FOR UPDATE")  # the group's commit waits on this
        appends = [asyncio.create_task(plog.append(batch(1))) for _ in range(20)]
        while not await db.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
            await asyncio.sleep(0.01)  # until the commit is in flight
        closing = asyncio.create_task(plog.close())  # waits for the commit in flight...
    await closing
    infos = await asyncio.wait_for(asyncio.gather(*appends), 30)  # ...which answers every append
    assert sorted(i.base_offset for i in infos) == list(range(20))
    assert await db.fetchval("SELECT next_offset FROM partitions WHERE partition = 0") == 20


async def test_no_snapshot_holds_state_that_was_not_committed(source_factory: SourceFactory, db) -> None:
    source = await source_factory(1, snapshot_interval_bytes=1 << 30)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1, pid=4, epoch=0, seq=0))
    await db.execute("UPDATE partitions SET next_offset = next_offset + 1")  # the append's fence will fail
    # An append and a DeleteRecords in one group: the log-start move (which snapshots) succeeds
    # while the append is applied in memory but not yet committed; then its commit is refused.
    appended, start = await asyncio.gather(plog.append(batch(1, pid=4, epoch=0, seq=1)),
                                           plog.delete_records_before(1), return_exceptions=True)
    assert isinstance(appended, KafkaError) and appended.code is ErrorCode.not_leader_or_follower
    assert start == 1
    for row in await db.fetch("SELECT data FROM producer_snapshots"):
        assert [e.last_seq for e in decode_snapshot(row["data"]) if e.producer_id == 4] == [0]


async def test_store_reads_whole_batches_within_max_bytes_from_the_one_holding_the_offset(plog) -> None:
    """The database read (below the tail cache): at least one batch (KIP-74), then only those
    that fit, over several query chunks, starting at the batch that holds the offset."""
    sizes = [len(batch(n)) for n in (1, 3, 1, 2)]
    for n in (1, 3, 1, 2) * 40:  # 160 batches: more than one chunk of rows
        await plog.append(batch(n))
    store = plog._store
    one, next_offset = await store.read(2, 1, limit=plog.high_watermark)
    assert [len(b) for b in one] == [sizes[1]] and next_offset == 4  # the batch of offsets 1-3
    two, next_offset = await store.read(0, sizes[0] + sizes[1] + sizes[2] - 1, limit=plog.high_watermark)
    assert [len(b) for b in two] == sizes[:2] and next_offset == 4
    everything, next_offset = await store.read(0, 10**9, limit=plog.high_watermark)
    assert len(everything) == 160 and next_offset == plog.high_watermark == 280
    below, next_offset = await store.read(0, 10**9, limit=7)
    assert len(below) == 4 and next_offset == 7
    # Without min_one (a fetch's later partition, KIP-74) a batch that does not fit is not fetched.
    assert await store.read(2, sizes[1] - 1, limit=plog.high_watermark, min_one=False) == ([], 2)
    fits, next_offset = await store.read(2, sizes[1] + sizes[2], limit=plog.high_watermark, min_one=False)
    assert [len(b) for b in fits] == sizes[1:3] and next_offset == 5
