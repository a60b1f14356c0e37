"""The connection pool every part of cluster mode shares (asyncpg's Pool), and what the code uses
of asyncpg, typed.

asyncpg ships no type hints: Pool, Connection and Row are Protocols of the calls made here, which
asyncpg's objects meet. A statement that does not answer within command_timeout fails
(asyncio.TimeoutError), so a database that hangs (a stopped server, a dead network path) turns
into retriable errors instead of requests that never end. Writes a request waits for are bounded
more tightly, by the time left on the broker's lease (within()).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol, TypeVar

import asyncpg  # type: ignore[import-untyped]

__all__ = ("DEFAULT_COMMAND_TIMEOUT_S", "DEFAULT_CONNECT_TIMEOUT_S", "Connection", "OutOfTime", "Pool", "Queries",
           "Row", "close_pool", "connect", "create_pool", "lasting", "stop_tasks", "within")

T = TypeVar("T")

DEFAULT_COMMAND_TIMEOUT_S: Final = 30.0
DEFAULT_CONNECT_TIMEOUT_S: Final = 60.0  # asyncpg's


class Row(Protocol):
    """A result row (asyncpg.Record), by column name or position."""

    def __getitem__(self, key: str | int, /) -> Any: ...  # a column's value: its type is the SQL's

    def __iter__(self) -> Any: ...  # the row's values, as above


class Queries(Protocol):
    """What a connection and the pool both run (the pool on a connection of its own)."""

    async def execute(self, query: str, *args: object, timeout: float | None = None) -> str: ...

    async def executemany(self, command: str, args: Iterable[Sequence[object]], *,
                          timeout: float | None = None) -> None: ...

    async def fetch(self, query: str, *args: object, timeout: float | None = None) -> list[Row]: ...

    async def fetchrow(self, query: str, *args: object, timeout: float | None = None) -> Row | None: ...

    async def fetchval(self, query: str, *args: object, column: int = 0,
                       timeout: float | None = None) -> Any: ...  # one column's value: the SQL's type


class Connection(Queries, Protocol):
    def transaction(self, *, isolation: str | None = None, readonly: bool = False,
                    deferrable: bool = False) -> AbstractAsyncContextManager[object]: ...

    async def add_listener(self, channel: str, callback: Callable[[Connection, int, str, str], None]) -> None: ...

    def is_closed(self) -> bool: ...

    async def close(self, *, timeout: float | None = None) -> None: ...

    def terminate(self) -> None: ...


class Pool(Queries, Protocol):
    def acquire(self, *, timeout: float | None = None) -> AbstractAsyncContextManager[Connection]: ...

    async def close(self) -> None: ...

    def terminate(self) -> None: ...


async def connect(url: str) -> Connection:
    """A connection of its own, outside the pool (LISTEN)."""
    conn: Connection = await asyncpg.connect(url)
    return conn


async def create_pool(url: str, *, max_size: int = 10, command_timeout: float = DEFAULT_COMMAND_TIMEOUT_S,
                      connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> Pool:
    """Connect (raises OSError or asyncpg's errors when the database cannot be reached).

    min_size 1: one connection is opened now, so an unreachable database fails the start; the
    others open on demand and the pool replaces any that a restart of the server broke, each
    given up after connect_timeout (behind a dead route a connection never completes).
    """
    pool: Pool = await asyncpg.create_pool(url, min_size=1, max_size=max_size, command_timeout=command_timeout,
                                           timeout=connect_timeout, reset=_keep_session)
    return pool


async def _keep_session(conn: Connection) -> None:
    """The pool's reset on release: nothing to send. asyncpg's default sends `SELECT
    pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;` each time, a round trip and a
    transaction of its own: about half of the database's commits under produce load. Nothing here
    leaves session state on a pool connection: the schema's advisory lock is transaction-scoped,
    there are no cursors and no SET, and LISTEN has a connection of its own (cluster_store.py).
    asyncpg still rolls back a transaction left open before this runs."""


async def close_pool(pool: Pool, timeout: float) -> None:
    """Close once every connection is back, or after timeout cut off the ones still held (a
    statement left to end by itself, within(), on a database that does not answer)."""
    try:
        async with asyncio.timeout(timeout):
            await pool.close()
    except TimeoutError:
        pool.terminate()


# How often within() reads its time left again while a statement runs (a fast one is answered
# before the first read).
_RECHECK_S: Final = 0.5


class OutOfTime(TimeoutError):
    """within()'s time ran out (a statement's own command_timeout is a plain TimeoutError)."""


async def within(work: Awaitable[T], time_left: Callable[[], float | None]) -> T:
    """work's result, or OutOfTime once time_left() (seconds; None: unbounded) reads 0 (work's
    outcome then unknown). Read again when it runs out, and at least every _RECHECK_S: a lease
    renewed meanwhile has more left, and a broker that is leaving has less (ClusterMember.stop).

    On OutOfTime work is left to end by itself (command_timeout) rather than cancelled: cancelling a
    statement sends PostgreSQL a cancel request over a new connection and waits for it, which with
    the network gone holds the caller as long as the statement would have.

    asyncio.wait, not wait_for: Python 3.11's wait_for returns work's result when the caller is
    cancelled as work ends, and the cancel is lost: a cleaner's loop went on cleaning and the
    broker's stop waited for it for good ("did not end within 20 s of SIGTERM").
    """
    task = asyncio.ensure_future(work)
    try:
        while (left := time_left()) is None or left > 0:
            if (await asyncio.wait({task}, timeout=None if left is None else min(left, _RECHECK_S)))[0]:
                return task.result()
    except asyncio.CancelledError:
        task.cancel()  # our caller ends (shutdown): so does the statement
        raise
    task.add_done_callback(_forget)
    raise OutOfTime("no answer while this broker's lease lasted")


def lasting(seconds: float | None) -> Callable[[], float | None]:
    """within()'s time_left for work that needs no lease but must not outlast one: `seconds` from
    now (None: unbounded)."""
    if seconds is None:
        return lambda: None
    loop = asyncio.get_running_loop()
    ends = loop.time() + seconds
    return lambda: ends - loop.time()


async def stop_tasks(tasks: Collection[asyncio.Task[Any]], timeout: float) -> None:
    """Cancel tasks and wait for them to end, no longer than timeout. One cancelled inside a
    statement does not end at once when the database does not answer: returning its connection
    to the pool, asyncpg waits for the server to answer the cancel request, up to the statement
    timeout. close_pool() ends that wait when it cuts the connections off."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
    for task in tasks:
        task.add_done_callback(_forget)


def _forget(task: asyncio.Future[Any]) -> None:
    """Retrieve a left statement's error: its request was answered already, nothing waits for it."""
    if not task.cancelled():
        task.exception()
