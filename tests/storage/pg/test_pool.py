"""The cluster's connection pool (storage/pg/pool.py) against a real PostgreSQL: a connection given
back to the pool costs no round trip (asyncpg's default reset sends one query and commits one
transaction per release), and a transaction left open is still rolled back; and within(), the bound
of the waits on it, keeps a cancel and answers work done as its time runs out with its outcome."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from storage.pg.pool import OutOfTime, create_pool, within

_LAST_QUERY = "SELECT query FROM pg_stat_activity WHERE pid = $1"


async def test_a_released_connection_sends_nothing(pg_url: str) -> None:
    pool = await create_pool(pg_url, max_size=1)
    watcher = await asyncpg.connect(pg_url)
    try:
        async with pool.acquire() as conn:
            pid = await conn.fetchval("SELECT pg_backend_pid()")
        # The backend's last query is still ours: the release sent none (the default reset's
        # "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;" would show here).
        assert await watcher.fetchval(_LAST_QUERY, pid) == "SELECT pg_backend_pid()"
    finally:
        await watcher.close()
        await pool.close()


async def test_a_transaction_left_open_is_rolled_back_on_release(pg_url: str) -> None:
    pool = await create_pool(pg_url, max_size=1)
    try:
        async with pool.acquire() as conn:
            await conn.execute("CREATE TABLE IF NOT EXISTS pool_left_open (n int)")
            await conn.execute("BEGIN")
            await conn.execute("INSERT INTO pool_left_open VALUES (1)")
        async with pool.acquire() as conn:  # the one connection again
            assert await conn.fetchval("SELECT count(*) FROM pool_left_open") == 0
            assert not conn.is_in_transaction()
    finally:
        await pool.close()


async def test_within_keeps_a_cancel_that_comes_as_the_work_ends() -> None:
    """The caller cancelled in the turn its statement is answered is cancelled: Python 3.11's
    asyncio.wait_for returned the answer and dropped the cancel, so a cleaner's loop went on after
    the broker's stop cancelled it, and the stop waited for it past 20 s."""
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def statement() -> str:
        return await answer

    caller = asyncio.ensure_future(within(statement(), lambda: 10.0))
    await asyncio.sleep(0.01)  # the caller waits for the statement
    answer.add_done_callback(lambda _: caller.cancel())  # runs right after the statement resumes
    answer.set_result("row")
    with pytest.raises(asyncio.CancelledError):
        await caller


async def test_work_done_as_its_time_runs_out_is_answered_with_its_outcome() -> None:
    """The work's answer and the end of its time in one turn of the loop (a busy broker's): its result,
    or OutOfTime if it was not done yet, never a bare TimeoutError for work that succeeded."""
    loop = asyncio.get_running_loop()
    results = []
    for _ in range(50):
        answer: asyncio.Future[int] = loop.create_future()
        ends = loop.time() + 0.005
        loop.call_at(ends, answer.set_result, 42)

        async def work(answer: asyncio.Future[int] = answer) -> int:  # a statement's coroutine
            return await answer

        try:
            results.append(await within(work(), lambda ends=ends: ends - loop.time()))
        except OutOfTime:
            pass
    assert results and set(results) == {42}


async def test_works_own_timeout_is_raised_as_it_is() -> None:
    async def times_out() -> None:
        raise TimeoutError("its own")

    with pytest.raises(TimeoutError, match="its own") as raised:
        await within(times_out(), lambda: 5.0)
    assert not isinstance(raised.value, OutOfTime)
