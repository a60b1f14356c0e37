"""One cleaning pass over an object-stored partition, in the cleaner's worker process: the rules of
storage/pg/clean_rows.py (the local cleaner's RecordFilter, its transaction tracking and its
fence) over the batches that `batch_runs` says where to find.

The worker opens its own connection and the store (credentials from its environment), maps each key
of the dirty section to its latest offset, then reads every run from the one holding the log start
to the end of the mapped section and writes what the rules keep, in offset order, into new objects
of up to cluster.object.archive.bytes (batches past the mapped section go as they are); a pass
that changes nothing stores nothing below that size. The switch is ONE
transaction, as a cleaning pass over rows: the old runs replaced by the new ones only if each is
still as read and this broker leads at the pass's epoch (storage/pg/object_archive.py), the aborted
transactions whose data is gone deleted, and the cleaner's checkpoint moved by clean_rows' fence.
A pass that does not commit leaves its objects as orphans; the old objects are collected a grace
period after no run reads them (storage/pg/object_gc.py), so fetches in flight still find them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Final

from protocol.record_batch import RecordBatchHeader, iter_batches

from ..cleaner.clean_pass import CleanResult, _Filter
from ..object_store import ObjectStore
from .clean_rows import FENCE, PgCleanResult, build_offset_map, connect, rules
from .cleaning import PgCleanTask, dirty_bytes
from .object_archive import ArchivedPartition, ReplacedError, archive_key, replace_runs
from .object_runs import CONTAINING_RUN, RUN_COLUMNS, Run, run_bytes, run_from_row

__all__ = ("clean_runs", "run_object_clean_pass")

_RUNS: Final = (f"SELECT {RUN_COLUMNS} FROM batch_runs "
                f"WHERE topic_id = $1 AND partition = $2 AND base_offset >= {CONTAINING_RUN} AND base_offset < $4 "
                "ORDER BY base_offset")


def run_object_clean_pass(task: PgCleanTask) -> PgCleanResult:
    """Worker process entry point."""
    return asyncio.run(_run(task))


async def _run(task: PgCleanTask) -> PgCleanResult:
    if task.objects is None:
        raise ValueError("a pass over object-stored data names its object store")
    conn = await connect(task)
    try:
        return await clean_runs(conn, task.objects.open(), task)
    finally:
        await conn.close()


async def _runs(conn: Any, task: PgCleanTask, start: int, end: int) -> list[Run]:
    return [run_from_row(r) for r in await conn.fetch(_RUNS, task.topic_id, task.partition, start, end)]


async def _batches(store: ObjectStore, runs: list[Run]) -> AsyncIterator[tuple[RecordBatchHeader, bytes]]:
    """Every batch of the runs, in order; CRCs checked (a pass must never launder corruption)."""
    for run in runs:
        data = await run_bytes(store, run)
        for pos, header in iter_batches(data, verify_crc=True):
            yield header, data[pos:pos + header.size]


async def _dirty(store: ObjectStore, runs: list[Run]) -> AsyncIterator[tuple[int, bytes]]:
    async for header, data in _batches(store, runs):
        yield header.base_offset, data


@dataclass(slots=True)
class _Output:
    """What the rules keep, cut into objects of up to the archive size, one run each."""

    store: ObjectStore
    node_id: int
    target_bytes: int
    runs: list[Run] = field(default_factory=list)
    parts: list[bytes] = field(default_factory=list)
    headers: list[RecordBatchHeader] = field(default_factory=list)
    size: int = 0

    async def add(self, header: RecordBatchHeader, data: bytes) -> None:
        self.parts.append(data)
        self.headers.append(header)
        self.size += len(data)
        if self.size >= self.target_bytes:
            await self.flush()

    async def flush(self) -> None:
        if not self.parts:
            return
        key = archive_key(self.node_id)
        await self.store.put(key, self.parts)
        self.runs.append(Run(self.headers[0].base_offset, self.headers[-1].last_offset,
                             max(h.max_timestamp for h in self.headers), key, 0, self.size))
        self.parts, self.headers, self.size = [], [], 0


async def _rewrite(store: ObjectStore, task: PgCleanTask, old: list[Run], filt: _Filter, latest: int,
                   result: PgCleanResult) -> tuple[_Output, bool]:
    """Write what the rules keep of the old runs; whether anything changed."""
    out, counts, changed = _Output(store, task.node_id, task.object_bytes), CleanResult(), False
    async for header, data in _batches(store, old):
        result.rows_read += 1
        result.bytes_read += len(data)
        view = memoryview(data)
        kept = view if header.base_offset > latest else filt.filter(header, view, counts)
        if kept is None:
            result.rows_deleted += 1
            result.bytes_removed += len(data)
            changed = True
            continue
        if kept is not view:
            new = bytes(kept)
            result.rows_rewritten += 1
            result.bytes_removed += len(data) - len(new)
            header, data, changed = RecordBatchHeader.parse(new), new, True
        await out.add(header, data)
    if changed:  # else the last part is not stored at all, and what was is deleted
        await out.flush()
    result.records_read, result.records_kept = counts.records_read, counts.records_kept
    result.bytes_written = result.bytes_read - result.bytes_removed
    return out, changed


async def clean_runs(conn: Any, store: ObjectStore, task: PgCleanTask) -> PgCleanResult:
    """Clean and commit (fenced); the result says what was done."""
    dirty = await _runs(conn, task, task.first_dirty_offset, task.first_uncleanable_offset)
    keys, latest = await build_offset_map(_dirty(store, dirty), task)
    result = PgCleanResult(end_offset=latest + 1)
    filt = rules(task, keys, latest)
    old = await _runs(conn, task, task.log_start_offset, latest + 1)
    out, changed = await _rewrite(store, task, old, filt, latest, result)
    kept = {a.last_offset for a in filt.txns.kept_aborted}
    result.removed_aborted = [a.last_offset for a in task.aborted
                              if a.last_offset <= latest and a.last_offset not in kept]
    if not changed:  # nothing to switch: only the checkpoint moves (past the archive size, parts were stored)
        await store.delete([r.object_key for r in out.runs])
        old, out.runs = [], []
    result.committed = await _commit(conn, task, old, out.runs, result)
    if result.committed:
        clean, dirty_after = await dirty_bytes(conn, task.topic_id, task.partition, result.end_offset,
                                               task.first_uncleanable_offset, objects=True)
        result.dirty_ratio_after = dirty_after / (clean + dirty_after) if clean + dirty_after else 0.0
    return result


async def _commit(conn: Any, task: PgCleanTask, old: list[Run], new: list[Run], result: PgCleanResult) -> bool:
    t, p = task.topic_id, task.partition
    started = time.monotonic()
    try:
        async with conn.transaction():
            fenced_at = time.monotonic()
            await replace_runs(conn, ArchivedPartition(t, p, task.leader_epoch), task.node_id, old, new,
                               [(r.object_key, r.byte_length) for r in new])
            if result.removed_aborted:
                await conn.execute("DELETE FROM aborted_txns WHERE topic_id = $1 AND partition = $2 "
                                   "AND last_offset = ANY($3::bigint[])", t, p, result.removed_aborted)
            if await conn.fetchval(FENCE, t, p, task.node_id, task.leader_epoch, result.end_offset,
                                   task.first_uncleanable_offset) is None:
                raise ReplacedError("fenced, or no producer snapshot covers the cleaned range")
    except ReplacedError as exc:
        result.not_committed = str(exc)
        return False  # the new objects are orphans: the collector deletes them
    done = time.monotonic()
    result.write_ms = (done - started) * 1000
    result.lock_ms = (done - fenced_at) * 1000
    return True
