"""Deleting the objects nothing reads any more (docs/cluster.md): orphans, stored by a flush, an
archive or a cleaning pass whose commit failed (a fenced or killed broker, rows changed meanwhile),
and recorded objects whose runs archiving, the cleaner, retention or DeleteRecords replaced or
removed. A recorded object is first marked when a round finds no run reading it, and deleted a grace
period after that: a fetch that read the old rows just before they changed still finds its bytes.
An orphan goes once its key (which carries its creation time) is older than the grace period, so a
commit still under way is never touched. Every broker runs it; deleting twice is harmless.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final

from ..object_store import ObjectStore
from .pool import Pool

__all__ = ("DEFAULT_ORPHAN_GRACE_MS", "collect_garbage", "collect_loop")

log = logging.getLogger(__name__)
DEFAULT_ORPHAN_GRACE_MS: Final = 600_000
_PREFIXES: Final = ("flush/", "archive/")  # the keys of flushes (object_commit.py) and rewrites (object_archive.py)

_NOT_READ: Final = "NOT EXISTS (SELECT 1 FROM batch_runs r WHERE r.object_key = o.object_key)"
_MARK: Final = f"UPDATE flush_objects o SET unreferenced_since = now() WHERE unreferenced_since IS NULL AND {_NOT_READ}"
_UNREFERENCED: Final = (
    "SELECT object_key FROM flush_objects o "
    f"WHERE unreferenced_since < now() - make_interval(secs => $1::float8 / 1000) AND {_NOT_READ}")


def _created_ms(key: str) -> int | None:
    """The time an object's key carries (flush/<ms>-<node>-<random>, archive/<ms>-...)."""
    stamp = key.split("/", 1)[-1].split("-", 1)[0]
    return int(stamp) if stamp.isdigit() else None


async def collect_garbage(pool: Pool, store: ObjectStore, grace_ms: int, now_ms: int) -> tuple[int, int]:
    """Mark the recorded objects no run reads, delete those marked longer than grace_ms ago and the
    orphans older than grace_ms; returns how many of each were deleted."""
    await pool.execute(_MARK)
    unreferenced = [r["object_key"] for r in await pool.fetch(_UNREFERENCED, grace_ms)]
    if unreferenced:
        await store.delete(unreferenced)
        await pool.execute("DELETE FROM flush_objects WHERE object_key = ANY($1::text[])", unreferenced)
    orphans = 0
    for prefix in _PREFIXES:
        async for chunk in store.list(prefix):
            old = [i.key for i in chunk if (made := _created_ms(i.key)) is not None and made < now_ms - grace_ms]
            if not old:
                continue
            known = {r["object_key"] for r in await pool.fetch(
                "SELECT object_key FROM flush_objects WHERE object_key = ANY($1::text[])", old)}
            gone = [k for k in old if k not in known]
            await store.delete(gone)
            orphans += len(gone)
    if unreferenced or orphans:
        log.info("object store: deleted %d objects no run reads any more and %d orphans of failed commits",
                 len(unreferenced), orphans)
    return len(unreferenced), orphans


async def collect_loop(pool: Pool, store: ObjectStore, grace_ms: int) -> None:
    """collect_garbage a few times per grace period, for as long as the broker runs."""
    failing = False
    while True:
        await asyncio.sleep(max(grace_ms / 4, 1000) / 1000)
        try:
            await collect_garbage(pool, store, grace_ms, int(time.time() * 1000))
            failing = False
        except Exception as exc:
            if not failing:
                log.warning("cannot delete unreferenced objects (trying again later): %r", exc)
            failing = True
