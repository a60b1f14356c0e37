"""Producer-id blocks from the cluster database: brokers taking blocks at the same time never
get overlapping ones, and the counter survives new connections (it is a row, not memory)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.api import ProducerIdBlockSource
from storage.pg.producer_ids import PgProducerIdBlocks
from storage.pg.schema import migrate


async def test_concurrent_blocks_never_overlap(db: asyncpg.Pool, pg_url: str) -> None:
    brokers = [PgProducerIdBlocks(db) for _ in range(3)]
    assert isinstance(brokers[0], ProducerIdBlockSource)
    firsts = await asyncio.gather(*(b.allocate_producer_ids(1000) for b in brokers for _ in range(10)))
    assert sorted(firsts) == list(range(0, 30_000, 1000))
    other = await asyncpg.create_pool(pg_url, min_size=1, max_size=1)
    try:
        assert await PgProducerIdBlocks(other).allocate_producer_ids(5) == 30_000
        assert await PgProducerIdBlocks(other).allocate_producer_ids(5) == 30_005
    finally:
        await other.close()


async def test_an_empty_block_is_refused(db: asyncpg.Pool) -> None:
    with pytest.raises(ValueError, match="at least one id"):
        await PgProducerIdBlocks(db).allocate_producer_ids(0)


async def test_a_database_that_does_not_answer_is_a_retriable_error(pg_url: str) -> None:
    """InitProducerId then answers COORDINATOR_LOAD_IN_PROGRESS (Kafka's answer while no block can
    be had) instead of UNKNOWN_SERVER_ERROR with a traceback."""
    pool = await asyncpg.create_pool(pg_url, min_size=1, max_size=1)
    await pool.close()  # as good as a database gone away, for the pool
    with pytest.raises(KafkaError) as info:
        await PgProducerIdBlocks(pool).allocate_producer_ids(10)
    assert info.value.code is ErrorCode.coordinator_load_in_progress
    assert "did not answer" in str(info.value)


async def test_honour_raises_the_counter_and_never_lowers_it(pg_url: str) -> None:
    pool = await asyncpg.create_pool(pg_url, min_size=1, max_size=2)
    try:
        async with pool.acquire() as conn:
            await migrate(conn)
        blocks = PgProducerIdBlocks(pool)
        await blocks.honour(500)
        assert await blocks.allocate_producer_ids(10) == 500
        await blocks.honour(100)  # below what is handed out already: no change
        assert await blocks.allocate_producer_ids(10) == 510
    finally:
        await pool.close()
