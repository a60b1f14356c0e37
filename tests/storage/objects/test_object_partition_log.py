"""PgPartitionLog with its record data in a real S3 server: the cluster log's own tests that do not
look at `batches` rows run again here (imported below), and what is particular to objects: one
object per flush for many partitions, runs recorded in one commit, fenced flushes leaving orphans,
a store that fails, and reads of older data by ranged GETs through a bounded cache."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import asyncpg
import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from storage.api import AppendOrigin, TopicPartition
from storage.object_store import ObjectStore, ObjectStoreError
from storage.pg.log_source import PgLogSource
from storage.pg.object_commit import FlushSettings
from storage.pg.object_gc import collect_garbage
from storage.pg.partition_log import PgPartitionLog
from tests.storage.objects.conftest import TP, StoreWrapper
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, marker, take, values
from tests.storage.pg.test_pg_partition_log import (  # noqa: F401  (run here over objects)
    test_a_new_leader_rebuilds_producer_state_and_deduplicates_retries,
    test_appends_in_flight_when_the_log_closes_are_answered,
    test_each_batch_carries_its_offset_and_the_leader_epoch,
    test_lookups_by_timestamp,
    test_no_snapshot_holds_state_that_was_not_committed,
    test_open_partition_refuses_a_partition_another_broker_leads,
    test_read_committed_across_a_failover,
    test_reads_from_the_database_span_more_rows_than_one_query_fetches,
    test_snapshots_are_stored_and_bound_the_replay,
    test_snapshots_follow_the_number_of_batches_too,
    test_store_reads_whole_batches_within_max_bytes_from_the_one_holding_the_offset,
)


async def _stored(store: ObjectStore) -> dict[str, int]:
    return {i.key: i.size async for chunk in store.list("flush/") for i in chunk}


async def test_appends_of_many_partitions_share_objects_and_commits(source: PgLogSource, db: asyncpg.Pool) -> None:
    await source.create_topic("t", 3)
    logs = [await take(db, source, TopicPartition("t", p)) for p in range(3)]
    await asyncio.gather(*(plog.append(batch(1, tag=b"%d-" % i)) for i in range(40) for plog in logs))
    for plog in logs:
        assert [o for o, _ in await values(plog)] == list(range(40))
    assert await db.fetchval("SELECT count(*) FROM batches") == 0  # no record data in the database
    objects = await db.fetch("SELECT object_key, size FROM flush_objects")
    assert len(objects) == source.committer.objects < 120  # grouped: fewer objects than appends
    assert await _stored(source.reader.store) == {r["object_key"]: r["size"] for r in objects}
    shared = await db.fetchval("SELECT max(n) FROM (SELECT count(*) AS n FROM batch_runs GROUP BY object_key) c")
    assert shared > 1  # one object holds runs of several partitions
    runs = await db.fetch("SELECT partition, base_offset, last_offset, byte_start, byte_length FROM batch_runs "
                          "ORDER BY partition, base_offset")
    for p in range(3):  # each partition's runs cover its offsets without a gap
        mine = [r for r in runs if r["partition"] == p]
        assert [r["base_offset"] for r in mine[1:]] == [r["last_offset"] + 1 for r in mine[:-1]]
        assert sum(r["byte_length"] for r in mine) == logs[p].size_bytes == sum(
            len(batch(1, tag=b"%d-" % i)) for i in range(40))


async def test_the_brokers_own_records_do_not_wait_out_flush_ms_and_store_no_object(
    source_factory: SourceFactory, db: asyncpg.Pool
) -> None:
    """A coordinator's record or a transaction marker (AppendOrigin.COORDINATOR) is flushed at
    once: with cluster.object.flush.ms at ten minutes each is durable and read back (a flush
    that waited would end in the test's timeout). A flush of nothing else stores no object: its
    bytes are held in its run's row, where a new leader reads them."""
    source = await source_factory(1, flush=FlushSettings(flush_ms=600_000))
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1, tag=b"state"), AppendOrigin.COORDINATOR)
    await plog.append(marker(7, commit=True), AppendOrigin.COORDINATOR)
    assert [v for _, v in await values(plog)] == [b"state0"]
    assert plog.high_watermark == 2 and source.committer.objects == 0
    runs = await db.fetch("SELECT object_key, length(data) AS inline FROM batch_runs ORDER BY base_offset")
    assert [r["object_key"] for r in runs] == ["", ""] and all(r["inline"] for r in runs)
    assert await db.fetchval("SELECT count(*) FROM flush_objects") == 0
    successor = await take(db, await source_factory(2), TP)  # no tail cache: it reads the rows
    assert [v for _, v in await values(successor)] == [b"state0"] and successor.high_watermark == 2


async def test_the_flush_window_runs_from_the_last_flush_of_client_records(
    source_factory: SourceFactory, db: asyncpg.Pool
) -> None:
    """While no flush is being stored or committed, cluster.object.flush.ms (ten minutes here) counts
    from the last flush of client records, not from the first write: an append after a quiet spell is
    flushed at once (had it waited, the test would end in its timeout), the next one waits in the
    window until a broker's own record takes it along."""
    source = await source_factory(1, flush=FlushSettings(flush_ms=600_000))
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    assert (await plog.append(batch(1, tag=b"a"))).base_offset == 0
    second = plog.submit(batch(1, tag=b"b"))
    assert isinstance(second, asyncio.Future)
    await asyncio.sleep(0.2)  # (time for a flush to be stored and committed, were it not waiting)
    waited = not second.done()
    await plog.append(batch(1, tag=b"state"), AppendOrigin.COORDINATOR)
    assert waited and (await second).base_offset == 1
    assert [v for _, v in await values(plog)] == [b"a0", b"b0", b"state0"]
    assert source.committer.objects == 2


async def test_a_fenced_flush_records_nothing_and_its_object_is_an_orphan(
    plog: PgPartitionLog, source: PgLogSource, db: asyncpg.Pool
) -> None:
    await plog.append(batch(2))
    await db.execute("UPDATE partitions SET leader = 2, leader_epoch = leader_epoch + 1 WHERE partition = 0")
    with pytest.raises(KafkaError) as err:
        await plog.append(batch(1))
    assert err.value.code is ErrorCode.not_leader_or_follower
    assert await db.fetchval("SELECT count(*) FROM batch_runs") == 1
    recorded = {r["object_key"] for r in await db.fetch("SELECT object_key FROM flush_objects")}
    stored = set(await _stored(source.reader.store))
    assert len(recorded) == 1 and recorded < stored and len(stored - recorded) == 1  # the orphan


class _Failing(StoreWrapper):
    """The real store, with PUTs refused while `down` (fault injection at the seam)."""

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store)
        self.down = False

    async def put(self, key: str, data: bytes | Sequence[bytes | memoryview]) -> None:
        if self.down:
            raise ObjectStoreError(self.description, key, "connection refused (injected)")
        await self.store.put(key, data)


async def test_a_store_that_refuses_the_flush_fails_the_append_retriably(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    failing = _Failing(s3_store)
    source = await source_factory(1, object_store=failing)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1, pid=5, epoch=0, seq=0))
    failing.down = True
    with pytest.raises(KafkaError) as err:
        await plog.append(batch(1, pid=5, epoch=0, seq=1))
    assert err.value.code is ErrorCode.kafka_storage_error and "nothing was written" in str(err.value)
    assert await db.fetchval("SELECT next_offset FROM partitions WHERE partition = 0") == 1
    failing.down = False
    retry = await plog.append(batch(1, pid=5, epoch=0, seq=1))  # the producer's retry: new, written once
    assert (retry.base_offset, retry.duplicate) == (1, False)
    assert (await plog.append(batch(1, pid=5, epoch=0, seq=1))).duplicate
    assert [o for o, _ in await values(plog)] == [0, 1]


async def test_older_data_comes_by_ranged_gets_through_a_bounded_cache(
    source_factory: SourceFactory, db: asyncpg.Pool
) -> None:
    writer = await source_factory(1)
    await writer.create_topic("t", 1)
    plog = await take(db, writer, TP)
    for i in range(30):
        await plog.append(batch(5, tag=b"%d-" % i))
    one = len(batch(5, tag=b"10-"))
    reader = await source_factory(2, read_cache_bytes=10 * one)
    successor = await take(db, reader, TP)  # its tail cache is empty: every read goes to the store
    gets = reader.reader.gets
    expected = [(o, b"%d-%d" % divmod(o, 5)) for o in range(150)]
    assert await values(successor) == expected
    assert reader.reader.gets - gets == 30  # one ranged GET per run
    info = await successor.read(140, 1 << 20)
    assert [h.base_offset for data in info.records for _, h in iter_batches(data)] == [140, 145]
    assert reader.reader.gets - gets == 30  # the newest runs were still cached
    await successor.read(0, 1)
    assert reader.reader.gets - gets == 31  # the oldest had been evicted: the cache is bounded


async def test_delete_records_and_retention_delete_runs(plog: PgPartitionLog, db: asyncpg.Pool) -> None:
    for i in range(5):
        await plog.append(batch(2, ts=1000 * (i + 1)))  # runs at 0, 2, 4, 6, 8
    assert await plog.delete_records_before(3) == 3
    assert await db.fetchval("SELECT min(base_offset) FROM batch_runs") == 2  # the run holding 3 stays
    assert await plog.read(3, 100)
    await plog.update_config(plog.config.__class__(retention_ms=10_000))
    assert await plog.enforce_retention(now_ms=10_000 + 4001) == 6
    assert await db.fetchval("SELECT count(*) FROM batch_runs") == 2
    assert plog.size_bytes == 2 * len(batch(2))


async def test_orphans_and_objects_retention_emptied_are_deleted_after_the_grace_period(
    source_factory: SourceFactory, s3_store: ObjectStore, db: asyncpg.Pool
) -> None:
    source = await source_factory(1)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    for i in range(4):
        await plog.append(batch(2, ts=1000 * (i + 1)))  # four flushes: runs at 0, 2, 4, 6
    await db.execute("UPDATE partitions SET leader = 2, leader_epoch = leader_epoch + 1 WHERE partition = 0")
    with pytest.raises(KafkaError):
        await plog.append(batch(1))  # fenced: its object is an orphan
    successor = await take(db, await source_factory(2), TP)
    assert await successor.delete_records_before(4) == 4  # the runs at 0 and 2 go
    before = await _stored(s3_store)
    assert len(before) == 5
    now = int(time.time() * 1000)
    assert await collect_garbage(source.pool, s3_store, 3_600_000, now) == (0, 0)  # all within the grace
    await db.execute("UPDATE flush_objects SET created_at = now() - interval '2 hours', "
                     "unreferenced_since = unreferenced_since - interval '2 hours'")
    assert await collect_garbage(source.pool, s3_store, 3_600_000, now + 7_200_000) == (2, 1)
    after = await _stored(s3_store)
    assert set(after) == {r["object_key"] for r in await db.fetch("SELECT object_key FROM batch_runs")}
    assert len(after) == 2 and after.keys() < before.keys()
    assert [o for o, _ in await values(successor, 4)] == [4, 5, 6, 7]  # what is kept still reads
