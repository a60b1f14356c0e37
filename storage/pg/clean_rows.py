"""One cleaning pass over a partition's rows in cluster mode, run in the cleaner's worker process.

The worker opens its own connection (the broker's event loop never decodes a record), reads the
dirty section to map each key to its latest offset, then reads the cleanable section from the log
start and applies the local cleaner's rules to each batch (storage/cleaner/: the same RecordFilter,
batch rewriting and transaction tracking). Batches the rules keep unchanged are not written;
batches wholly removed are deleted; the others are rewritten in place (same base offset, original
producer id/epoch/base sequence/codec, new CRC).

All of it is committed in one PostgreSQL transaction, which is the crash safety Kafka's
.cleaned/.swap files give: a kill -9 at any moment leaves the old rows or the new ones. The fence is
the transaction's last statement: `partitions.cleaner_checkpoint` moves only where this broker
still leads at the pass's leader epoch, and only if a producer snapshot exists at or beyond the
cleaned section (a new leader then never replays headers from a cleaned range); otherwise the
transaction rolls back and nothing of the pass remains. Rows are the last to be locked only by
this pass (appends insert rows above the high watermark; reads need no lock), and the partition's
row is held from the fence to the commit alone: `lock_ms` measures it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

import asyncpg  # type: ignore[import-untyped]

from protocol.record_batch import RecordBatchHeader, iter_batches

from ..cleaner.batch_filter import decode_raw_records
from ..cleaner.clean_pass import CleanResult, _control_type, _Filter
from ..cleaner.transactions import CleanedTransactions
from .cleaning import PgCleanTask, dirty_bytes
from .partition_store import _CONTAINING
from .pool import DEFAULT_CONNECT_TIMEOUT_S, Connection

__all__ = ("FENCE", "PgCleanResult", "build_offset_map", "clean_partition", "connect", "rules", "run_pg_clean_pass")

_CHUNK: Final = 256
_STATEMENT_TIMEOUT_S: Final = 300.0

FENCE: Final = """
UPDATE partitions SET cleaner_checkpoint = greatest(cleaner_checkpoint, $5)
WHERE topic_id = $1 AND partition = $2 AND leader = $3 AND leader_epoch = $4
  AND EXISTS (SELECT 1 FROM producer_snapshots s WHERE s.topic_id = $1 AND s.partition = $2 AND s.end_offset >= $6)
RETURNING 1
"""


@dataclass(slots=True, kw_only=True)
class PgCleanResult:
    end_offset: int = 0  # the next pass's first dirty offset
    committed: bool = False  # False: fenced (deposed leader) or nothing to write; nothing changed
    bytes_read: int = 0
    bytes_written: int = 0  # bytes of the cleaned section's rows after the pass
    bytes_removed: int = 0
    rows_read: int = 0
    rows_deleted: int = 0
    rows_rewritten: int = 0
    records_read: int = 0
    records_kept: int = 0
    removed_aborted: list[int] = field(default_factory=list)  # last_offset of aborted_txns rows deleted
    write_ms: float = 0.0  # the transaction, first write to commit
    lock_ms: float = 0.0  # the partition row held: fence to commit
    dirty_ratio_after: float = 0.0
    not_committed: str = ""  # why, when the pass knows better than "fenced or no snapshot" (objects: runs changed)


def run_pg_clean_pass(task: PgCleanTask) -> PgCleanResult:
    """Worker process entry point."""
    return asyncio.run(_run(task))


async def connect(task: PgCleanTask) -> Connection:
    """The worker's own connection to the cluster database, given up after one lease as the broker's
    pool's are (behind a dead route it never completes). Its statements keep a long timeout: a pass's
    rewrite is one statement that grows with the pass, and one bounded by the lease would fail again
    at every try; a pass its broker no longer leads fails its fence anyway."""
    timeout = DEFAULT_CONNECT_TIMEOUT_S if task.lease_s is None else task.lease_s
    conn: Connection = await asyncpg.connect(task.url, command_timeout=_STATEMENT_TIMEOUT_S, timeout=timeout)
    return conn


async def _run(task: PgCleanTask) -> PgCleanResult:
    conn = await connect(task)
    try:
        return await clean_partition(conn, task)
    finally:
        await conn.close()


async def _rows(conn: Connection, task: PgCleanTask, start: int, end: int) -> AsyncIterator[tuple[int, bytes]]:
    """(base offset, data) of the rows from the one holding start up to those starting before end."""
    position = start
    first = True
    while True:
        lower = _CONTAINING if first else "$3"
        rows = await conn.fetch(
            f"SELECT base_offset, data FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset >= "
            f"{lower} AND base_offset < $4 ORDER BY base_offset LIMIT $5",
            task.topic_id, task.partition, position, end, _CHUNK)
        for row in rows:
            yield row["base_offset"], row["data"]
        if len(rows) < _CHUNK:
            return
        position, first = rows[-1]["base_offset"] + 1, False


def _header(data: bytes) -> RecordBatchHeader:
    # CRCs are checked: a pass rewrites what it reads, so it must never launder corruption.
    return next(iter_batches(data, verify_crc=True))[1]


async def build_offset_map(batches: AsyncIterator[tuple[int, bytes]],
                           task: PgCleanTask) -> tuple[dict[bytes, int], int]:
    """Each key's latest offset in the dirty section (aborted records and markers left out), and the
    last offset mapped (the map may fill up first: the pass then ends there). batches: (base
    offset, bytes) of each batch of the dirty section, from the one holding its first offset."""
    keys: dict[bytes, int] = {}
    txns = CleanedTransactions()
    txns.add_aborted(task.aborted)
    latest = task.first_dirty_offset - 1
    async for _, data in batches:
        h = _header(data)
        if h.is_control:
            txns.on_marker(h, _control_type(h, memoryview(data)))
        elif not txns.on_batch(h) and h.last_offset >= task.first_dirty_offset:
            if len(keys) >= task.map_capacity:
                return keys, latest
            for r in decode_raw_records(data, h):
                if r.key is not None and r.offset >= task.first_dirty_offset:
                    keys[r.key] = r.offset
        latest = max(latest, h.last_offset)
    return keys, latest


def rules(task: PgCleanTask, keys: dict[bytes, int], latest: int) -> _Filter:
    """The local cleaner's RecordFilter, over the CleanRules the task carries."""
    return _Filter(task, keys, latest)


@dataclass(slots=True)
class _Changes:
    deleted: list[int] = field(default_factory=list)
    rewritten: list[tuple[int, int, bytes]] = field(default_factory=list)  # base offset, max timestamp, data


async def _filter_rows(conn: Connection, task: PgCleanTask, filt: _Filter, latest: int,
                       result: PgCleanResult) -> _Changes:
    changes = _Changes()
    counts = CleanResult()
    async for base, data in _rows(conn, task, task.log_start_offset, latest + 1):
        h = _header(data)
        result.rows_read += 1
        result.bytes_read += len(data)
        view = memoryview(data)
        kept = filt.filter(h, view, counts)
        if kept is None:
            changes.deleted.append(base)
            result.bytes_removed += len(data)
        elif kept is not view:
            new = bytes(kept)
            changes.rewritten.append((base, RecordBatchHeader.parse(new).max_timestamp, new))
            result.bytes_removed += len(data) - len(new)
    result.records_read, result.records_kept = counts.records_read, counts.records_kept
    result.bytes_written = result.bytes_read - result.bytes_removed
    return changes


async def clean_partition(conn: Connection, task: PgCleanTask) -> PgCleanResult:
    """Clean and commit (fenced); the result says what was done."""
    keys, latest = await build_offset_map(_rows(conn, task, task.first_dirty_offset, task.first_uncleanable_offset),
                                          task)
    result = PgCleanResult(end_offset=latest + 1)
    filt = rules(task, keys, latest)
    changes = await _filter_rows(conn, task, filt, latest, result)
    kept = {a.last_offset for a in filt.txns.kept_aborted}
    result.removed_aborted = [a.last_offset for a in task.aborted
                              if a.last_offset <= latest and a.last_offset not in kept]
    result.committed = await _commit(conn, task, changes, result)
    if result.committed:
        clean, dirty = await dirty_bytes(conn, task.topic_id, task.partition, result.end_offset,
                                         task.first_uncleanable_offset)
        result.dirty_ratio_after = dirty / (clean + dirty) if clean + dirty else 0.0
    return result


class _Fenced(Exception):
    """The fence failed inside the transaction: roll it back."""


async def _commit(conn: Connection, task: PgCleanTask, changes: _Changes, result: PgCleanResult) -> bool:
    t, p = task.topic_id, task.partition
    started = time.monotonic()
    try:
        async with conn.transaction():
            if changes.deleted:
                await conn.execute("DELETE FROM batches WHERE topic_id = $1 AND partition = $2 "
                                   "AND base_offset = ANY($3::bigint[])", t, p, changes.deleted)
            if changes.rewritten:
                await conn.execute(
                    "UPDATE batches b SET data = u.data, max_timestamp = u.max_timestamp FROM "
                    "unnest($3::bigint[], $4::bigint[], $5::bytea[]) AS u(base_offset, max_timestamp, data) "
                    "WHERE b.topic_id = $1 AND b.partition = $2 AND b.base_offset = u.base_offset", t, p,
                    *map(list, zip(*changes.rewritten, strict=True)))
            if result.removed_aborted:
                await conn.execute("DELETE FROM aborted_txns WHERE topic_id = $1 AND partition = $2 "
                                   "AND last_offset = ANY($3::bigint[])", t, p, result.removed_aborted)
            fenced_at = time.monotonic()
            if await conn.fetchval(FENCE, t, p, task.node_id, task.leader_epoch, result.end_offset,
                                   task.first_uncleanable_offset) is None:
                raise _Fenced
    except _Fenced:
        return False
    done = time.monotonic()
    result.write_ms = (done - started) * 1000
    result.lock_ms = (done - fenced_at) * 1000
    result.rows_deleted, result.rows_rewritten = len(changes.deleted), len(changes.rewritten)
    return True
