"""Reads of a partition whose record data lives in an object store (storage/pg/object_commit.py):
`batch_runs` says where each run of batches lies (object key, byte range, offsets, max timestamp),
and the bytes come by ranged GETs through a cache bounded in bytes, shared by the broker's logs. A run
of the broker's own records only (transaction markers, a coordinator's state) may be held inline in
its row instead (object key '', the bytes in `data`: storage/pg/object_commit.py) until it is archived.

ObjectPartitionStore is a PartitionStore whose batch reads go to runs; everything else (the
partition row, producer snapshots, aborted transactions) stays in the database's rows. Runs below
the high watermark never change, so a cached range is never stale. The newest batches are served
from the leader's memory before any of this (storage/pg/tail_cache.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Final

from protocol.record_batch import HEADER_SIZE, LOG_OVERHEAD, RecordBatchHeader, iter_batches, select_batches

from ..object_store import ObjectNotFoundError, ObjectStore
from .partition_store import PartitionStore
from .pool import Pool

__all__ = ("CONTAINING_RUN", "DEFAULT_READ_CACHE_BYTES", "RUN_COLUMNS", "ObjectPartitionStore", "ObjectReader", "Run",
           "run_bytes", "run_from_row")

DEFAULT_READ_CACHE_BYTES: Final = 64 << 20
_NO_END: Final = (1 << 63) - 1  # the largest offset
_RUN_CHUNK: Final = 16  # runs per query of a read; more queries follow while max_bytes allows
RUN_COLUMNS: Final = "base_offset, last_offset, max_timestamp, object_key, byte_start, byte_length, data"
# The run holding offset $3: the newest run that starts at or before it.
CONTAINING_RUN: Final = ("coalesce((SELECT max(base_offset) FROM batch_runs WHERE topic_id = $1 AND partition = $2 "
                      "AND base_offset <= $3), $3)")
_RUNS: Final = (f"SELECT {RUN_COLUMNS} FROM batch_runs WHERE topic_id = $1 AND partition = $2 "
                f"AND base_offset >= {CONTAINING_RUN} AND base_offset < $4 AND last_offset >= $3 "
                "ORDER BY base_offset LIMIT $5")


@dataclass(frozen=True, slots=True)
class Run:
    base_offset: int
    last_offset: int
    max_timestamp: int
    object_key: str
    byte_start: int
    byte_length: int
    data: bytes | None = None  # the run's bytes, held inline in its row (object_key '')


def run_from_row(row: Any) -> Run:
    return Run(row["base_offset"], row["last_offset"], row["max_timestamp"], row["object_key"],
               row["byte_start"], row["byte_length"], row["data"])


async def run_bytes(store: ObjectStore, run: Run) -> bytes:
    """The run's bytes, from its row or by a ranged GET (no cache: the archiver's and cleaner's reads)."""
    if run.data is not None:
        return run.data
    return await store.get_range(run.object_key, run.byte_start, run.byte_start + run.byte_length)


class ObjectReader:
    """Ranged GETs of runs through an LRU cache of at most max_bytes; concurrent reads of one
    range share one GET."""

    def __init__(self, store: ObjectStore, max_bytes: int = DEFAULT_READ_CACHE_BYTES) -> None:
        self.store = store
        self._max_bytes = max_bytes
        self._cached: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._bytes = 0
        self._inflight: dict[tuple[str, int], asyncio.Future[bytes]] = {}
        self.gets = 0  # GETs sent (how well the cache serves)

    async def read(self, run: Run) -> bytes:
        if run.data is not None:
            return run.data
        key = (run.object_key, run.byte_start)
        data = self._cached.get(key)
        if data is not None:
            self._cached.move_to_end(key)
            return data
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            self.gets += 1
            data = await self.store.get_range(run.object_key, run.byte_start, run.byte_start + run.byte_length)
            future.set_result(data)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a read nobody shared must not warn
            raise
        finally:
            del self._inflight[key]
        self._keep(key, data)
        return data

    def _keep(self, key: tuple[str, int], data: bytes) -> None:
        if len(data) > self._max_bytes:
            return
        self._cached[key] = data
        self._bytes += len(data)
        while self._bytes > self._max_bytes:
            _, old = self._cached.popitem(last=False)
            self._bytes -= len(old)


def _batches(data: bytes, start: int, end: int) -> Iterator[tuple[int, RecordBatchHeader]]:
    """(position, header) of the run's batches that end at or after start and begin below end."""
    for pos, header in iter_batches(data, verify_crc=False):
        if header.base_offset >= end:
            return
        if header.last_offset >= start:
            yield pos, header


def _split(run: memoryview) -> list[memoryview]:
    """Whole batches laid end to end, one view each (as rows are read: a batch per element)."""
    out, pos = [], 0
    while pos < len(run):
        size = LOG_OVERHEAD + int.from_bytes(run[pos + 8:pos + 12], "big")
        out.append(run[pos:pos + size])
        pos += size
    return out


class ObjectPartitionStore(PartitionStore):
    """Batches read from runs; size, DeleteRecords and retention over runs, a run at a time (as
    Kafka deletes a segment at a time: a run holding the new log start stays)."""

    table = "batch_runs"
    _size = "byte_length"

    def __init__(self, pool: Pool, topic_id: uuid.UUID, partition: int, reader: ObjectReader) -> None:
        super().__init__(pool, topic_id, partition)
        self._reader = reader

    async def _runs(self, start: int, end: int, limit: int = _RUN_CHUNK) -> list[Run]:
        rows = await self._pool.fetch(_RUNS, self.topic_id, self.partition, start, end, limit)
        return [run_from_row(r) for r in rows]

    async def _each_run(self, start: int, end: int) -> AsyncGenerator[tuple[Run, bytes], None]:
        """Every run from the one holding start to end, with its bytes, in offset order."""
        position, retried = start, False
        while position < end:
            runs = await self._runs(position, end)
            for run in runs:
                try:
                    data = await self._reader.read(run)
                except ObjectNotFoundError:
                    # Rewritten (archived, cleaned) and collected since its row was read, or past
                    # the grace period: the rows say where the bytes are now. Once; then an error.
                    if retried:
                        raise
                    retried = True
                    break
                yield run, data
                position = run.last_offset + 1
            else:
                if len(runs) < _RUN_CHUNK:
                    return

    async def read(self, fetch_offset: int, max_bytes: int, limit: int,
                   min_one: bool = True) -> tuple[list[bytes], int]:
        out: list[Any] = []
        size, next_offset = 0, fetch_offset
        async with aclosing(self._each_run(fetch_offset, limit)) as runs:
            async for _, data in runs:
                chosen = select_batches(data, next_offset, max_bytes - size, limit, min_one and not out)
                if chosen.start >= 0 and chosen.end > chosen.start:
                    out += _split(memoryview(data)[chosen.start:chosen.end])
                    size += chosen.end - chosen.start
                    next_offset = chosen.next_offset
                if chosen.complete:
                    break
        return out, next_offset

    async def batches_by_timestamp(self, timestamp: int, min_offset: int, limit: int) -> AsyncIterator[bytes]:
        position = min_offset
        while True:
            rows = await self._pool.fetch(
                f"SELECT {RUN_COLUMNS} FROM batch_runs WHERE topic_id = $1 AND partition = $2 AND last_offset >= $3 "
                "AND base_offset < $4 AND max_timestamp >= $5 ORDER BY base_offset LIMIT 8",
                self.topic_id, self.partition, position, limit, timestamp)
            for run in map(run_from_row, rows):
                data = await self._reader.read(run)
                for pos, header in _batches(data, min_offset, limit):
                    if header.max_timestamp >= timestamp:
                        yield data[pos:pos + header.size]
            if len(rows) < 8:
                return
            position = rows[-1]["last_offset"] + 1

    async def batch_with_max_timestamp(self, limit: int) -> bytes | None:
        row = await self._pool.fetchrow(
            f"SELECT {RUN_COLUMNS} FROM batch_runs WHERE topic_id = $1 AND partition = $2 AND base_offset < $3 "
            "ORDER BY max_timestamp DESC, base_offset LIMIT 1", self.topic_id, self.partition, limit)
        if row is None:
            return None
        data = await self._reader.read(run_from_row(row))
        best: tuple[int, RecordBatchHeader] | None = None
        for pos, header in _batches(data, 0, limit):
            if best is None or header.max_timestamp > best[1].max_timestamp:
                best = (pos, header)
        return None if best is None else data[best[0]:best[0] + best[1].size]

    async def batch_at(self, offset: int) -> bytes | None:
        async with aclosing(self._each_run(offset, offset + 1)) as runs:
            async for _, data in runs:
                for pos, header in _batches(data, offset, offset + 1):
                    if header.base_offset == offset:
                        return data[pos:pos + HEADER_SIZE]
        return None

    async def first_header(self, offset: int) -> bytes | None:
        async with aclosing(self._each_run(offset, _NO_END)) as runs:
            async for _, data in runs:
                for pos, header in _batches(data, offset, _NO_END):
                    if header.base_offset >= offset:
                        return data[pos:pos + HEADER_SIZE]
        return None

    async def replay_headers(self, start: int, end: int) -> AsyncIterator[bytes]:
        async for _, data in self._each_run(start, end):
            for pos, header in _batches(data, start, end):
                yield data[pos:pos + (header.size if header.is_control else HEADER_SIZE)]
