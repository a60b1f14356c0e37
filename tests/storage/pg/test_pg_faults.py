"""The cluster database lost while a leader appends: retriable errors only, nothing acknowledged
lost, no offset written twice, and appends succeed again once the database is back."""

from __future__ import annotations

import asyncio

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from tests.pg_server import PostgresServer
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, take, values

TP = TopicPartition("t", 0)


async def test_a_database_restart_while_appending_loses_nothing_acknowledged(
    pg_server: PostgresServer, source_factory: SourceFactory, db
) -> None:
    source = await source_factory(1, command_timeout=5)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    acked: dict[int, bytes] = {}
    errors: list[ErrorCode] = []
    restarted, started = asyncio.Event(), asyncio.Event()

    async def produce() -> None:
        seq = 0
        while not restarted.is_set() or len(acked) < 10 + seq // 2:
            value = b"r%d" % seq
            try:
                info = await plog.append(batch(1, tag=value, pid=5, epoch=0, seq=seq))
            except KafkaError as exc:
                errors.append(exc.code)
                await asyncio.sleep(0.05)  # a client's retry backoff
                continue  # the same sequence again, as an idempotent producer retries
            acked[info.base_offset] = value + b"0"
            seq += 1
            if seq == 5:
                started.set()

    producer = asyncio.create_task(produce())
    await started.wait()
    await asyncio.to_thread(pg_server.restart, "immediate")
    restarted.set()
    await asyncio.wait_for(producer, 60)
    assert set(errors) <= {ErrorCode.kafka_storage_error}
    stored = dict(await values(plog))
    assert stored == acked  # every acknowledged record at its offset, and nothing else
    assert await db.fetchval("SELECT next_offset FROM partitions") == plog.high_watermark == len(acked)


async def test_appends_fail_while_the_database_is_down_and_resume_after(
    pg_server: PostgresServer, source_factory: SourceFactory, db
) -> None:
    source = await source_factory(1, command_timeout=5)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1))
    await asyncio.to_thread(pg_server.stop, "immediate")
    try:
        for _ in range(2):  # the failed write, then the re-read before the next one
            try:
                await plog.append(batch(1))
            except KafkaError as exc:
                assert exc.code is ErrorCode.kafka_storage_error
            else:
                raise AssertionError("an append succeeded with the database down")
    finally:
        await asyncio.to_thread(pg_server.start)
    assert (await plog.append(batch(1))).base_offset == 1
    assert [o for o, _ in await values(plog)] == [0, 1]


async def _unconfirmed_commit(plog, db) -> None:
    """An append whose statement times out (the partition row is locked) while the database, as
    far as anyone can tell afterwards, committed it: its batch at offset 1, next_offset 2."""
    async with db.acquire() as conn, conn.transaction():
        # Everything waits, the append's statement and any re-read of the partition, until this
        # transaction has "committed" the append (a re-read must not see the state before it).
        await conn.execute("LOCK TABLE partitions IN ACCESS EXCLUSIVE MODE")
        topic_id = await conn.fetchval("SELECT topic_id FROM partitions")
        with pytest.raises(KafkaError) as err:  # ...until the statement times out
            await plog.append(batch(1, pid=9, epoch=0, seq=1))
        assert err.value.code is ErrorCode.kafka_storage_error
        written = bytes(build_batch([Record(key=b"k0", value=b"v0", timestamp=1000)], base_offset=1,
                                    producer_id=9, producer_epoch=0, base_sequence=1,
                                    partition_leader_epoch=plog.leader_epoch))
        await conn.execute("INSERT INTO batches VALUES ($1, 0, 1, 1, 1000, $2)", topic_id, written)
        await conn.execute("UPDATE partitions SET next_offset = 2")


async def test_an_append_whose_commit_was_not_confirmed_is_found_on_retry(
    source_factory: SourceFactory, db
) -> None:
    """The database may commit an append whose answer never arrives: the log re-reads its state
    before the next append, so the producer's retry is recognised as a duplicate."""
    source = await source_factory(1, command_timeout=2, refresh_interval_ms=3_600_000)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1, pid=9, epoch=0, seq=0))
    await _unconfirmed_commit(plog, db)
    retry = await plog.append(batch(1, pid=9, epoch=0, seq=1))
    assert (retry.base_offset, retry.duplicate) == (1, True)
    assert (await plog.append(batch(1, pid=9, epoch=0, seq=2))).base_offset == 2
    assert [o for o, _ in await values(plog)] == [0, 1, 2]


async def test_an_unconfirmed_commit_becomes_readable_without_another_append(
    source_factory: SourceFactory, db
) -> None:
    source = await source_factory(1, command_timeout=2, refresh_interval_ms=50)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1, pid=9, epoch=0, seq=0))
    await _unconfirmed_commit(plog, db)

    async def reread() -> None:  # the source's periodic round re-reads the stale log
        while plog.high_watermark != 2:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(reread(), 30)
    assert not plog.stale
    assert [o for o, _ in await values(plog)] == [0, 1]


async def test_an_append_not_confirmed_within_the_lease_resigns_and_its_retry_is_found_at_the_new_leader(
    source_factory: SourceFactory, db
) -> None:
    """A write is waited for only while the lease lasts (the committer's time_left; the statement
    timeout is far longer): then NOT_LEADER_OR_FOLLOWER, the log resigns, and the new leader finds
    the producer's retry a duplicate when the database committed the write all the same."""
    source = await source_factory(1, command_timeout=30, refresh_interval_ms=3_600_000)
    resigned: list[TopicPartition] = []
    source.add_fenced_listener(resigned.append)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(1, pid=9, epoch=0, seq=0))
    async with db.acquire() as conn, conn.transaction():
        await conn.execute("LOCK TABLE partitions IN ACCESS EXCLUSIVE MODE")
        topic_id = await conn.fetchval("SELECT topic_id FROM partitions")
        lease_ends = asyncio.get_running_loop().time() + 1.0  # no heartbeat renews it
        source.committer.time_left = lambda: lease_ends - asyncio.get_running_loop().time()
        with pytest.raises(KafkaError) as err:
            await plog.append(batch(1, pid=9, epoch=0, seq=1))
        assert err.value.code is ErrorCode.not_leader_or_follower
        assert plog.fenced and resigned == [TP]
        written = bytes(build_batch([Record(key=b"k0", value=b"v0", timestamp=1000)], base_offset=1,
                                    producer_id=9, producer_epoch=0, base_sequence=1,
                                    partition_leader_epoch=plog.leader_epoch))
        await conn.execute("INSERT INTO batches VALUES ($1, 0, 1, 1, 1000, $2)", topic_id, written)
        await conn.execute("UPDATE partitions SET next_offset = 2")
    successor = await take(db, await source_factory(2), TP)
    retry = await successor.append(batch(1, pid=9, epoch=0, seq=1))
    assert (retry.base_offset, retry.duplicate) == (1, True)
    assert (await successor.append(batch(1, pid=9, epoch=0, seq=2))).base_offset == 2
    assert [o for o, _ in await values(successor)] == [0, 1, 2]
