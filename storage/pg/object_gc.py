"""Deleting the objects nothing reads any more (docs/cluster.md): orphans, stored by a flush whose
commit failed (a fenced or killed broker), and recorded objects whose runs retention or
DeleteRecords removed. Both only once older than the grace period, so a flush whose commit is still
under way is never touched. Every broker runs it; deleting twice is harmless.
"""

from __future__ import annotations

import logging
from typing import Final

from ..object_store import ObjectStore
from .pool import Pool

__all__ = ("DEFAULT_ORPHAN_GRACE_MS", "collect_garbage")

log = logging.getLogger(__name__)
DEFAULT_ORPHAN_GRACE_MS: Final = 600_000

_UNREFERENCED: Final = (
    "SELECT object_key FROM flush_objects o WHERE created_at < now() - make_interval(secs => $1::float8 / 1000) "
    "AND NOT EXISTS (SELECT 1 FROM batch_runs r WHERE r.object_key = o.object_key)")


def _created_ms(key: str) -> int | None:
    """The time a flush object's key carries (flush/<ms>-<node>-<random>)."""
    stamp = key.removeprefix("flush/").split("-", 1)[0]
    return int(stamp) if stamp.isdigit() else None


async def collect_garbage(pool: Pool, store: ObjectStore, grace_ms: int, now_ms: int) -> tuple[int, int]:
    """Delete the unreferenced recorded objects and the orphans older than grace_ms; returns how
    many of each."""
    unreferenced = [r["object_key"] for r in await pool.fetch(_UNREFERENCED, grace_ms)]
    if unreferenced:
        await store.delete(unreferenced)
        await pool.execute("DELETE FROM flush_objects WHERE object_key = ANY($1::text[])", unreferenced)
    orphans = 0
    async for chunk in store.list("flush/"):
        old = [i.key for i in chunk if (made := _created_ms(i.key)) is not None and made < now_ms - grace_ms]
        if not old:
            continue
        known = {r["object_key"] for r in await pool.fetch(
            "SELECT object_key FROM flush_objects WHERE object_key = ANY($1::text[])", old)}
        gone = [k for k in old if k not in known]
        await store.delete(gone)
        orphans += len(gone)
    if unreferenced or orphans:
        log.info("object store: deleted %d objects no run reads any more and %d orphans of failed flushes",
                 len(unreferenced), orphans)
    return len(unreferenced), orphans
