"""Group commit with the record data in an object store (cluster.object.store.url, docs/cluster.md).

The partition logs hand over PartitionWrites as with rows (storage/pg/group_commit.py). The writes
that arrive within cluster.object.flush.ms of the first, or until cluster.object.flush.bytes are
buffered, go into ONE object: each partition's batches laid end to end, one run per partition. Once
the store has the object, ONE statement fences every partition (this broker, its leader epoch, the
expected next offset), records the runs of the partitions that passed (object key, byte range,
base/last offset, max timestamp) with their aborted transactions and the object itself, and only
then are the writes acknowledged. A flush of the broker's own records only (transaction markers, a
coordinator's state, BatchRow.urgent), up to INLINE_MAX_BYTES, stores no object: the same statement
holds each run's bytes in its row (batch_runs.data, object key '').

Outcomes: the PUT fails, or is not done within the lease or one lease from its start -> nothing was committed
(KAFKA_STORAGE_ERROR; the logs re-read their state). The statement fails -> unknown, as with rows,
and not done within the lease -> NOT_LEADER_OR_FOLLOWER, the logs resign (storage/pg/group_commit.py).
A partition fenced -> its run is not recorded; an object no commit recorded is an orphan, deleted after
a grace period. A crash between the PUT and the commit leaves an orphan and no acknowledgement; the
producer's retry is new to the next leader, which rebuilt its state from the database, and written
once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import RecordBatchHeader

from ..object_store import ObjectStore
from .group_commit import FENCE, GroupCommitter, PartitionWrite, Queued, fail_all, insert_aborted
from .pool import Pool, lasting, within
from .write_order import after_predecessors, coalesce

__all__ = ("DEFAULT_FLUSH", "FlushSettings", "ObjectGroupCommitter", "flush_object_key")

log = logging.getLogger(__name__)
# Fault injection for the crash tests only (docs/cluster.md), read once at start-up and unset by
# default: the broker kills itself (SIGKILL) right after storing the Nth object of this process
# that holds a producer's records (not only markers or the broker's own records), before the
# commit that would record it. Unset, a flush checks one attribute and nothing more.
CRASH_AFTER_PUT_ENV: Final = "EOSBROKER_FAULT_KILL_AFTER_OBJECT_PUT"

_COMMIT: Final = FENCE + """, r AS (
    INSERT INTO batch_runs (topic_id, partition, base_offset, last_offset, max_timestamp, object_key, byte_start,
                            byte_length, data)
    SELECT r.topic_id, r.partition, r.base_offset, r.last_offset, r.max_timestamp, $7, r.byte_start, r.byte_length,
           r.data
    FROM unnest($9::uuid[], $10::int[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::int[],
                $16::bytea[])
        AS r(topic_id, partition, base_offset, last_offset, max_timestamp, byte_start, byte_length, data)
    WHERE (r.topic_id, r.partition) IN (SELECT topic_id, partition FROM fenced)
)""" + insert_aborted(17) + """, o AS (
    INSERT INTO flush_objects (object_key, node_id, size) SELECT $7, $1, $8
    WHERE EXISTS (SELECT 1 FROM fenced) AND $7 <> ''
)
SELECT topic_id, partition FROM fenced
"""


@dataclass(frozen=True, slots=True)
class FlushSettings:
    flush_ms: int = 10
    flush_bytes: int = 4 << 20


DEFAULT_FLUSH: Final = FlushSettings()
# A flush of the broker's own records only (transaction markers, a coordinator's state) up to this size
# stores no object: its runs' bytes go in their rows (batch_runs.data, as the issue lets markers stay
# in the database), so each such step of a transaction (four of a one-record one's five) saves a PUT.
# The archiver moves them into an object with the runs around them.
INLINE_MAX_BYTES: Final = 64 << 10


def flush_object_key(node_id: int) -> str:
    """Keys sort by creation time, so orphan collection and a person listing the store see age."""
    return f"flush/{int(time.time() * 1000):013d}-{node_id}-{uuid.uuid4().hex[:16]}"


def _size(write: PartitionWrite) -> int:
    return sum(len(b.data) for b in write.batches)


def _urgent(write: PartitionWrite) -> bool:
    return any(b.urgent for b in write.batches)


class ObjectGroupCommitter(GroupCommitter):
    def __init__(self, pool: Pool, node_id: int, store: ObjectStore, settings: FlushSettings, *,
                 concurrency: int = 2) -> None:
        super().__init__(pool, node_id, concurrency=concurrency)
        self._store = store
        self._settings = settings
        self._put_failing = False
        self.objects = 0  # objects stored (each is one flush)
        crash_after = os.environ.get(CRASH_AFTER_PUT_ENV, "")
        self._crash_after = int(crash_after) if crash_after.isdigit() else None
        self._producer_objects = 0  # objects stored that hold a producer's records (for _crash_after)
        self._data_left = -math.inf  # when the last flush holding client records left (time.monotonic())
        self._flushing = 0  # flushes being stored or committed
        self.inline_max_bytes = INLINE_MAX_BYTES  # (a test holding a marker's PUT sets -1)

    async def _worker(self) -> None:
        while True:
            async with self._taking:
                group = await self._gather()
            self._flushing += 1
            try:
                await self._commit_group(coalesce(group))
            finally:
                self._flushing -= 1

    async def _gather(self) -> list[Queued]:
        """The writes of one flush: from the first, until flush.ms passed or flush.bytes are in,
        or at once with what is queued once one is urgent (BatchRow.urgent: a transaction's next
        step waits on it, and a one-record transaction waits on four of them one after another).
        While no flush is being stored or committed the window runs from the last flush of client
        records instead: a write after a quiet spell (a producer's one request, a one-record
        transaction's data) leaves at once rather than wait for writes that are not coming, and
        flushes still leave at most about once per flush.ms. While one is, the wait costs little
        and gathers the writes that come meanwhile (a transaction's next step takes them along)."""
        group = [await self._queue.get()]
        size = _size(group[0][0])
        urgent = _urgent(group[0][0])
        start = time.monotonic() if self._flushing else min(time.monotonic(), self._data_left)
        deadline = start + self._settings.flush_ms / 1000
        while size < self._settings.flush_bytes and not (urgent and self._queue.empty()):
            if self._queue.empty():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:  # asyncio.timeout: Python 3.11's wait_for loses a cancel (close) that comes with a write
                    async with asyncio.timeout(remaining):
                        item = await self._queue.get()
                except TimeoutError:
                    break
            else:
                item = self._queue.get_nowait()
            group.append(item)
            size += _size(item[0])
            urgent = urgent or _urgent(item[0])
        if any(not b.urgent for w, _ in group for b in w.batches):
            self._data_left = time.monotonic()
        return group

    async def _commit_group(self, group: list[Queued]) -> None:
        parts, runs, size = _layout([w for w, _ in group])
        inline = size <= self.inline_max_bytes and all(b.urgent for w, _ in group for b in w.batches)
        key = "" if inline else flush_object_key(self._node_id)
        if not inline and not await self._stored(group, key, parts):
            return
        # A write whose predecessor (in an earlier flush) was not committed is left out: its run
        # in this object is never referenced, as a fenced partition's.
        ready = await after_predecessors(group)
        if not ready:
            return
        kept = {id(reply) for _, reply in ready}
        runs = [run for (_, reply), run in zip(group, runs, strict=True) if id(reply) in kept]
        await self._run_statement(ready, _COMMIT, self._node_id,
                                  *_arguments([w for w, _ in ready], key, size, runs, inline))

    async def _stored(self, group: list[Queued], key: str, parts: list[bytes]) -> bool:
        """PUT the flush's object; False (its writes answered) if the store did not take it."""
        try:
            await within(self._store.put(key, parts), self._put_time_left())
        except Exception as exc:
            self._put_failed(group, exc)
            return False
        if self._put_failing:
            self._put_failing = False
            log.info("flushes to the object store succeed again")
        self.objects += 1
        if self._crash_after is not None:
            self._maybe_crash(key, [w for w, _ in group])
        return True

    def _put_time_left(self) -> Callable[[], float | None]:
        """The lease's time left, and at most one lease from now: a store that stops answering
        (a black-holed route) while the database renews the lease is given up after one lease, not
        after the S3 client's own request timeout and retries."""
        if self.lease_s is None:
            return self.time_left
        once = lasting(self.lease_s)
        return lambda: _sooner(self.time_left(), once())

    def _maybe_crash(self, key: str, writes: list[PartitionWrite]) -> None:
        """CRASH_AFTER_PUT_ENV's fault: count the objects holding a producer's records, die at the Nth."""
        produced = sum(1 for w in writes for b in w.batches if _from_a_producer(b.data))
        if not produced:
            return
        self._producer_objects += 1
        if self._crash_after is not None and self._producer_objects >= self._crash_after:
            log.warning("fault injection: killed after storing object %s (%d batches of producers), before its "
                        "commit", key, produced)
            os.kill(os.getpid(), signal.SIGKILL)

    def _put_failed(self, group: list[Queued], exc: Exception) -> None:
        if not self._put_failing:
            log.warning("flushes to the object store fail, answering KAFKA_STORAGE_ERROR: %s", exc)
        self._put_failing = True
        fail_all(group, KafkaError(ErrorCode.kafka_storage_error, f"the object store did not take the append "
                                   f"(nothing was written; retry): {exc}"))


def _sooner(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _from_a_producer(batch: bytes) -> bool:
    header = RecordBatchHeader.parse(batch)
    return header.has_producer_id and not header.is_control


_Run = tuple[int, int]  # (byte_start, byte_length) of one write's batches in the object


def _layout(writes: list[PartitionWrite]) -> tuple[list[bytes], list[_Run], int]:
    """The object's parts (every batch, each write's together) and where each write's run lies."""
    parts: list[bytes] = []
    runs: list[_Run] = []
    position = 0
    for w in writes:
        length = 0
        for b in w.batches:
            parts.append(b.data)
            length += len(b.data)
        runs.append((position, length))
        position += length
    return parts, runs, position


def _arguments(writes: list[PartitionWrite], key: str, size: int, runs: list[_Run], inline: bool) -> list[object]:
    """$2..$22: the fence's columns, the key and size, the runs' columns (inline: each run's bytes in
    its row, from byte 0), the aborted ones'."""
    cols: list[list[object]] = [[] for _ in range(19)]
    for w, (start, length) in zip(writes, runs, strict=True):
        for col, value in zip(cols[0:5], (w.topic_id, w.partition, w.leader_epoch, w.expected_offset,
                                          w.next_offset), strict=True):
            col.append(value)
        if w.batches:
            run = (w.topic_id, w.partition, w.batches[0].base_offset, w.batches[-1].last_offset,
                   max(b.max_timestamp for b in w.batches), 0 if inline else start, length,
                   b"".join(b.data for b in w.batches) if inline else None)
            for col, value in zip(cols[5:13], run, strict=True):
                col.append(value)
        for a in w.aborted:
            for col, value in zip(cols[13:19], (w.topic_id, w.partition, a.producer_id, a.first_offset,
                                                a.last_offset, a.last_stable_offset), strict=True):
                col.append(value)
    return [*cols[0:5], key, size, *cols[5:]]
