"""Archiving (docs/cluster.md): the small runs flushes leave, a partition at a time, rewritten in
the background into per-partition objects, so the rows of `batch_runs` per partition stay bounded
(at most four per cluster.object.archive.bytes of data, plus the newest flushes) and older reads are
sequential GETs of one object.

A partition's runs are grouped in offset order: consecutive runs smaller than a quarter of the
target, as many as fit in it. A group is rewritten once it holds cluster.object.archive.min.runs runs,
or once it is full (its next run would not fit), so small archives merge again, and a run of a
quarter of the target or more is stored once more at most (_KEPT_FRACTION). The bytes are
the runs' bytes end to end, unchanged: one object, one run. It is PUT first, then ONE transaction,
fenced like a flush's commit (this broker leads at the epoch it read), replaces the group's rows by
the new one, but only if every row is still as it was read (retention, DeleteRecords or the cleaner
may have changed them meanwhile: then nothing changes and the new object is an orphan).

The old objects are deleted by the collector (storage/pg/object_gc.py) only a grace period after
it first found no run reading them: a fetch that read the old rows before the switch still finds
their objects, and the read cache keys ranges by object, so it never mixes the two.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from ..object_store import ObjectStore
from .object_runs import RUN_COLUMNS, Run, run_bytes, run_from_row
from .pool import Connection, Pool

__all__ = ("ArchiveSettings", "DEFAULT_ARCHIVE", "ArchivedPartition", "archive_key", "archive_loop",
           "archive_partition", "plan_archive")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ArchiveSettings:
    target_bytes: int = 64 << 20  # cluster.object.archive.bytes
    min_runs: int = 32  # cluster.object.archive.min.runs
    interval_ms: int = 10_000  # cluster.object.archive.interval.ms


DEFAULT_ARCHIVE: Final = ArchiveSettings()
# The runs, and in the same snapshot the cleaner's checkpoint (compacted topics), which groups never straddle.
_RUN_ROWS: Final = (f"SELECT {RUN_COLUMNS}, "
                    "(SELECT cleaner_checkpoint FROM partitions WHERE topic_id = $1 AND partition = $2) AS checkpoint "
                    "FROM batch_runs WHERE topic_id = $1 AND partition = $2 ORDER BY base_offset")
_FENCE: Final = ("SELECT 1 FROM partitions WHERE topic_id = $1 AND partition = $2 AND leader = $3 "
                 "AND leader_epoch = $4 FOR SHARE")
_REPLACE: Final = """
WITH d AS (
    DELETE FROM batch_runs r
    USING unnest($3::bigint[], $4::text[], $5::bigint[]) AS o(base_offset, object_key, byte_start)
    WHERE r.topic_id = $1 AND r.partition = $2 AND r.base_offset = o.base_offset AND r.object_key = o.object_key
      AND r.byte_start = o.byte_start
    RETURNING 1
)
SELECT count(*) FROM d
"""
_INSERT_RUNS: Final = """
INSERT INTO batch_runs (topic_id, partition, base_offset, last_offset, max_timestamp, object_key, byte_start,
                        byte_length)
SELECT $1, $2, r.* FROM unnest($3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::int[])
    AS r(base_offset, last_offset, max_timestamp, object_key, byte_start, byte_length)
"""


def _never() -> bool:
    return False


@dataclass(frozen=True, slots=True)
class ArchivedPartition:
    """What one log tells the archiver: where its runs are, the epoch it leads at, and whether
    this broker's cleaner is rewriting its runs now."""

    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    being_cleaned: Callable[[], bool] = _never


def archive_key(node_id: int) -> str:
    """As flush keys (storage/pg/object_commit.py), so the collector reads their age the same way."""
    return f"archive/{int(time.time() * 1000):013d}-{node_id}-{uuid.uuid4().hex[:16]}"


# A run of at least 1/_KEPT_FRACTION of archive.bytes stays as it is: merging it again would copy
# at least that much to save one row. Without this every byte of a busy partition was stored three
# times (its flush, an archive of min.runs flushes, then that archive merged with the next ones until
# full), and the rewrites ran beside the appends they follow.
_KEPT_FRACTION: Final = 4


def plan_archive(runs: Sequence[Run], settings: ArchiveSettings, checkpoint: int = 0) -> list[list[Run]]:
    """The groups of consecutive small runs to rewrite, each into one object. No group holds runs
    on both sides of the cleaner's checkpoint: the cleaner counts a run's bytes as clean or dirty
    by where the run starts, so one that merged the cleaned section with the dirty runs after it
    counted them all as clean, and the partition was not cleaned again while the archive grew."""
    groups: list[list[Run]] = []
    group: list[Run] = []
    size = 0

    def close(full: bool) -> None:
        if len(group) >= 2 and (full or len(group) >= settings.min_runs):
            groups.append(group)

    for run in runs:
        if run.byte_length * _KEPT_FRACTION >= settings.target_bytes:  # big enough already: it ends the group
            close(False)
            group, size = [], 0
        elif group and group[-1].base_offset < checkpoint <= run.base_offset:  # the first dirty run: a new group
            close(False)
            group, size = [run], run.byte_length
        elif size + run.byte_length > settings.target_bytes:  # no more fits: the group is full
            close(True)
            group, size = [run], run.byte_length
        else:
            group.append(run)
            size += run.byte_length
    close(False)
    return groups


class ReplacedError(Exception):
    """Rows of a rewrite changed (or the broker was fenced) before its commit: nothing changed."""


async def replace_runs(conn: Connection, part: ArchivedPartition, node_id: int, old: Sequence[Run],
                       new: Sequence[Run], objects: Sequence[tuple[str, int]]) -> None:
    """In the caller's transaction: fence, delete the old rows (all of them, as read, or raise
    ReplacedError), insert the new runs and their objects."""
    t, p = part.topic_id, part.partition
    if await conn.fetchval(_FENCE, t, p, node_id, part.leader_epoch) is None:
        raise ReplacedError(f"this broker no longer leads it at epoch {part.leader_epoch}")
    deleted = await conn.fetchval(_REPLACE, t, p, [r.base_offset for r in old],
                                  [r.object_key for r in old], [r.byte_start for r in old])
    if deleted != len(old):
        raise ReplacedError("its runs changed meanwhile (retention, DeleteRecords, archiving or cleaning)")
    if new:
        await conn.execute(_INSERT_RUNS, t, p, *(list(c) for c in zip(
            *((r.base_offset, r.last_offset, r.max_timestamp, r.object_key, r.byte_start, r.byte_length)
              for r in new), strict=True)))
    if objects:
        await conn.execute("INSERT INTO flush_objects (object_key, node_id, size) SELECT k, $1, s "
                           "FROM unnest($2::text[], $3::bigint[]) AS o(k, s)", node_id,
                           [k for k, _ in objects], [s for _, s in objects])


async def archive_partition(pool: Pool, store: ObjectStore, part: ArchivedPartition, node_id: int,
                            settings: ArchiveSettings) -> int:
    """Rewrite the partition's groups of small runs; returns how many runs were replaced."""
    rows = await pool.fetch(_RUN_ROWS, part.topic_id, part.partition)
    replaced = 0
    for group in plan_archive([run_from_row(r) for r in rows], settings, rows[0]["checkpoint"] if rows else 0):
        if part.being_cleaned():
            # A cleaning pass replaces the runs it read only if they are still as read: rewriting any
            # of them voids it, and under steady writes a pass slower than the archiving interval would
            # seldom if ever commit. It writes what it cleans into archives itself; the rest waits a round.
            return replaced
        data = [await run_bytes(store, r) for r in group]
        key, size = archive_key(node_id), sum(len(d) for d in data)
        await store.put(key, data)
        merged = Run(group[0].base_offset, group[-1].last_offset, max(r.max_timestamp for r in group), key, 0, size)
        try:
            async with pool.acquire() as conn, conn.transaction():
                await replace_runs(conn, part, node_id, group, [merged], [(key, size)])
        except ReplacedError as exc:  # the object is an orphan: the collector deletes it
            log.info("archiving partition %s-%d stopped: %s", part.topic_id, part.partition, exc)
            return replaced
        replaced += len(group)
    return replaced


async def archive_loop(pool: Pool, store: ObjectStore, node_id: int, settings: ArchiveSettings,
                       partitions: Callable[[], Iterable[ArchivedPartition]]) -> None:
    """Every interval, archive the partitions this broker leads (one at a time: it is background work)."""
    failing = False
    while True:
        await asyncio.sleep(settings.interval_ms / 1000)
        try:
            replaced = 0
            for part in list(partitions()):
                replaced += await archive_partition(pool, store, part, node_id, settings)
            if replaced:
                log.info("archived %d runs into per-partition objects", replaced)
            failing = False
        except Exception as exc:  # the store or the database away: the next round tries again
            if not failing:
                log.warning("cannot archive flushed runs (trying again later): %r", exc)
            failing = True
