"""Waits a request has on the cluster database beyond appends, bounded by the broker's lease rather
than the statement timeout: a read for Fetch or ListOffsets and the producer snapshot that follows
an append's answer by the lease's time left (after which another broker leads), a producer-id block for
InitProducerId, a topic change, which need no lease, and the lease's own heartbeat and registration by
one lease's length. A broker cut off from the database answers in time, with a retriable error.

Each case holds a lock the statement needs until the request has been answered; the statement
timeout (600 s) is beyond pytest's, so without the bound the test hangs and fails."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import asyncpg
import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.api import BrokerEndpoint, TopicPartition
from storage.log_messages import BARRIER
from storage.pg.cluster_store import ClusterStore
from storage.pg.log_source import PgLogSource
from storage.pg.pool import close_pool, create_pool
from storage.pg.producer_ids import PgProducerIdBlocks
from tests.storage.pg.conftest import SourceFactory
from tests.storage.pg.helpers import batch, take, values

TP = TopicPartition("t", 0)
STATEMENT_TIMEOUT_S = 600


def lease_of(seconds: float) -> Callable[[], float]:
    """A lease no heartbeat renews: its time left, as ClusterMember.lease_left_s counts it."""
    ends = asyncio.get_running_loop().time() + seconds
    return lambda: max(ends - asyncio.get_running_loop().time(), 0.0)


@asynccontextmanager
async def locked(db: asyncpg.Pool, table: str) -> AsyncIterator[None]:
    """Every statement on table (reads too) waits until the block ends."""
    async with db.acquire() as conn, conn.transaction():
        await conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield


async def _new_leader_of_three_records(source_factory: SourceFactory, db: asyncpg.Pool) -> PgLogSource:
    """Node 2 leading TP after node 1 wrote three records: its tail cache is empty, reads go to the database."""
    first = await source_factory(1, command_timeout=STATEMENT_TIMEOUT_S)
    await first.create_topic("t", 1)
    await (await take(db, first, TP)).append(batch(3))
    second = await source_factory(2, command_timeout=STATEMENT_TIMEOUT_S)
    await take(db, second, TP)
    return second


async def test_a_read_the_database_does_not_answer_within_the_lease_answers_not_leader(
    source_factory: SourceFactory, db: asyncpg.Pool
) -> None:
    source = await _new_leader_of_three_records(source_factory, db)
    plog = source.logs[TP]
    source.committer.time_left = lease_of(1.0)
    async with locked(db, "batches"):
        for request in (plog.read(0, 1 << 20), plog.offset_for_timestamp(0), plog.offset_for_max_timestamp()):
            with pytest.raises(KafkaError) as err:
                await request
            assert err.value.code is ErrorCode.not_leader_or_follower
    source.committer.time_left = lambda: None  # the lease renewed: reads are served again
    assert [o for o, _ in await values(plog)] == [0, 1, 2]


async def test_a_producer_id_block_not_had_within_the_lease_is_retriable(pg_url: str, db: asyncpg.Pool) -> None:
    blocks = PgProducerIdBlocks(db)
    first = await blocks.allocate_producer_ids(10)
    blocks.bound_s = 1.0
    async with locked(db, "cluster_meta"):
        with pytest.raises(KafkaError) as err:
            await blocks.allocate_producer_ids(10)
        assert err.value.code is ErrorCode.coordinator_load_in_progress
    blocks.bound_s = None
    assert await blocks.allocate_producer_ids(10) >= first + 10  # the left statement may have taken one


async def test_a_topic_change_not_confirmed_within_the_lease_times_out(
    source_factory: SourceFactory, db: asyncpg.Pool
) -> None:
    source = await source_factory(1, command_timeout=STATEMENT_TIMEOUT_S, refresh_interval_ms=50)
    source.change_bound_s = 1.0
    async with locked(db, "topics"):
        with pytest.raises(KafkaError) as err:
            await source.create_topic("late", 2)
        assert err.value.code is ErrorCode.request_timed_out
    # The statement was left to finish: the topic exists once the database takes it.
    while "late" not in source.topics:
        await asyncio.sleep(0.05)


@contextmanager
def warnings_of(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    found: list[str] = []
    with caplog.at_level(logging.WARNING, logger="storage.pg.partition_log"):
        yield found
    found += [r.getMessage() for r in caplog.records if r.name == "storage.pg.partition_log"]


async def test_an_append_is_answered_when_its_producer_snapshot_outlasts_the_lease(
    source_factory: SourceFactory, db: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    source = await source_factory(1, command_timeout=STATEMENT_TIMEOUT_S, snapshot_interval_batches=1)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    source.committer.time_left = lease_of(2.0)
    with warnings_of(caplog) as found:
        async with locked(db, "producer_snapshots"):
            # Answered once committed: the snapshot it makes due runs after it, in the log's queue,
            # and gives up when the lease runs out (the barrier behind it waits for that).
            info = await plog.append(batch(1, pid=7, epoch=0, seq=0))
            await plog.ask(BARRIER)
    assert info.base_offset == 0 and plog.high_watermark == 1
    assert any("producer snapshot at offset 1 failed" in m for m in found), found


async def test_a_log_closes_while_its_final_snapshot_waits_and_leaves_the_statement_to_end(
    source_factory: SourceFactory, db: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    """The final snapshot is given up after FINAL_SNAPSHOT_TIMEOUT_S without cancelling its
    statement: a cancel request waits for an answer that a dead network never gives."""
    source = await source_factory(1, command_timeout=STATEMENT_TIMEOUT_S)
    await source.create_topic("t", 1)
    plog = await take(db, source, TP)
    await plog.append(batch(2, pid=7, epoch=0, seq=0))
    count = "SELECT count(*) FROM producer_snapshots WHERE end_offset = 2"
    with warnings_of(caplog) as found:
        async with locked(db, "producer_snapshots"):
            await plog.close()  # (reading the table here would wait for the lock too)
    assert any("producer snapshot at offset 2 failed" in m for m in found), found
    while await db.fetchval(count) == 0:  # not cancelled: it is written once the table is free
        await asyncio.sleep(0.05)


async def test_a_pool_closes_by_its_timeout_while_a_left_statement_holds_a_connection(pg_url: str) -> None:
    pool = await create_pool(pg_url, max_size=2, command_timeout=STATEMENT_TIMEOUT_S)
    left = asyncio.ensure_future(pool.fetchval("SELECT pg_sleep($1)", float(STATEMENT_TIMEOUT_S)))
    while await pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'") == 0:
        await asyncio.sleep(0.05)
    await close_pool(pool, 0.5)  # pool.close() alone waits for the statement
    with pytest.raises(asyncpg.ConnectionDoesNotExistError):  # its connection was cut off
        await left


async def test_a_pool_gives_up_a_connection_that_never_completes_after_its_connect_timeout() -> None:
    """Behind a dead route (here a port that completes the TCP handshake and never answers) a new
    connection fails after connect_timeout, not asyncpg's 60 s."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises(TimeoutError):
            await create_pool(f"postgresql://eos@127.0.0.1:{silent.getsockname()[1]}/eos", connect_timeout=0.5)


async def test_a_heartbeat_or_registration_the_database_does_not_answer_fails_after_one_lease(
    pg_url: str, db: asyncpg.Pool
) -> None:
    """Not after the statement timeout: the next heartbeat, tried a lease / 4 later, finds the
    database once it is back."""
    pool = await create_pool(pg_url, max_size=4, command_timeout=STATEMENT_TIMEOUT_S)
    try:
        store = ClusterStore(pool, 1, lease_ms=1000)
        assert await store.register(BrokerEndpoint(1, "127.0.0.1", 9092))
        async with locked(db, "brokers"):
            with pytest.raises(TimeoutError):
                await store.heartbeat()
            with pytest.raises(TimeoutError):
                await ClusterStore(pool, 2, lease_ms=1000).register(BrokerEndpoint(2, "127.0.0.1", 9093))
        assert not await store.heartbeat()  # the lease lapsed meanwhile (the heartbeat left ran too late)
        assert await store.register(BrokerEndpoint(1, "127.0.0.1", 9092))
    finally:
        await close_pool(pool, 1.0)
