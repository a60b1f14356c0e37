"""The loop that keeps a broker's copy of small shared tables fresh (ACLs and SCRAM credentials,
dynamic broker configs): re-read when cluster_meta's version row moved, every interval."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .pool import Pool

__all__ = ("poll_forever", "read_if_moved")

log = logging.getLogger(__name__)


async def poll_forever(refresh: Callable[[], Awaitable[bool]], interval_s: float, what: str) -> None:
    """Call refresh every interval_s until cancelled; a database that does not answer is one
    WARNING per outage (the last copy read keeps serving) and one INFO when it answers again."""
    failing = False
    while True:
        await asyncio.sleep(interval_s)
        try:
            await refresh()
        except Exception as exc:
            if not failing:
                log.warning("cannot re-read %s from the cluster database (%r); serving the last ones read "
                            "until it answers", what, exc)
            failing = True
        else:
            if failing:
                log.info("%s are read from the cluster database again", what)
            failing = False


# Dynamic: the rows' column values, of whatever types the queries select.
async def read_if_moved(pool: Pool, version_key: str, known: str | None,
                        *queries: str) -> tuple[str, list[list[Any]]] | None:
    """The version row and the queries' rows, in one snapshot, if the version is not `known`;
    None (one row read) if it is."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        version = await conn.fetchval("SELECT value FROM cluster_meta WHERE key = $1", version_key)
        if version == known and known is not None:
            return None
        return version, [await conn.fetch(q) for q in queries]
