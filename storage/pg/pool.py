"""The connection pool every part of cluster mode shares (asyncpg's Pool).

asyncpg ships no type hints, so the pool is typed Any here, once; callers treat it as asyncpg's
Pool. A statement that does not answer within command_timeout fails (asyncio.TimeoutError), so a
database that hangs (a stopped server, a dead network path) turns into retriable errors instead of
requests that never end.
"""

from __future__ import annotations

from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]

__all__ = ("DEFAULT_COMMAND_TIMEOUT_S", "Pool", "create_pool")

Pool = Any  # asyncpg.Pool
DEFAULT_COMMAND_TIMEOUT_S: Final = 30.0


async def create_pool(url: str, *, max_size: int = 10, command_timeout: float = DEFAULT_COMMAND_TIMEOUT_S) -> Pool:
    """Connect (raises OSError or asyncpg's errors when the database cannot be reached).

    min_size 1: one connection is opened now, so an unreachable database fails the start; the
    others open on demand and the pool replaces any that a restart of the server broke.
    """
    return await asyncpg.create_pool(url, min_size=1, max_size=max_size, command_timeout=command_timeout)
