"""Group commit: the appends of many partitions in one database statement, each fenced on its own.

Every partition log hands one PartitionWrite per group of appends (docs/cluster.md): the batches
with their assigned offsets, the aborted transactions their markers completed, the leader epoch it
holds and the next offset it expects. While one statement runs, the writes that arrive queue up and
go together in the next one, so the number of commits grows with time, not with requests.

One statement, not one per partition: the UPDATE of `partitions` is the fence (this broker, this
epoch, the expected next offset); the inserts take only the rows of partitions whose fence passed,
and the statement returns those partitions. A partition missing from the answer was taken over by
another broker: its write wrote nothing. A statement runs in its own implicit transaction, so a
write is acknowledged only after its commit, and one round trip carries the whole group.

A statement that fails (the database went away, its statement timeout) leaves its outcome unknown:
every write of the group fails with KAFKA_STORAGE_ERROR and the partition logs re-read their state
from the database before the next append. A statement is waited for only as long as the broker's
lease has left (time_left): past that another broker may lead the partitions, so a write not
confirmed by then fails with NOT_LEADER_OR_FOLLOWER, its outcome just as unknown, and its log
resigns as a fenced one does; the producer's retry goes to the new leader, which finds it a
duplicate if it was written.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from protocol.errors import ErrorCode, KafkaError

from ..api import AbortedTxn
from .pool import OutOfTime, Pool, Row, within
from .write_order import after_predecessors, coalesce

__all__ = ("FENCE", "BatchRow", "GroupCommitter", "PartitionWrite", "Queued", "fail_all", "insert_aborted")

log = logging.getLogger(__name__)

# The fence of every partition of a group ($1 the node, $2-$6 one element per write): the CTE
# `fenced` holds the partitions whose write may go in. storage/pg/object_commit.py shares it.
FENCE: Final = """
WITH w AS (
    SELECT * FROM unnest($2::uuid[], $3::int[], $4::int[], $5::bigint[], $6::bigint[])
        AS w(topic_id, partition, leader_epoch, expected, next_offset)
), fenced AS (
    UPDATE partitions p SET next_offset = w.next_offset FROM w
    WHERE p.topic_id = w.topic_id AND p.partition = w.partition AND p.leader = $1
      AND p.leader_epoch = w.leader_epoch AND p.next_offset = w.expected
    RETURNING p.topic_id, p.partition
)"""


def insert_aborted(first: int) -> str:
    """The CTE `a` adding a group's aborted transactions ($first to $first+5, one element per
    transaction) of the partitions `fenced` let through; object_commit.py's commit has it too."""
    topic_id, partition, producer_id, first_offset, last_offset, lso = (f"${first + i}" for i in range(6))
    return f""", a AS (
    INSERT INTO aborted_txns (topic_id, partition, producer_id, first_offset, last_offset, last_stable_offset)
    SELECT a.* FROM unnest({topic_id}::uuid[], {partition}::int[], {producer_id}::bigint[], {first_offset}::bigint[],
                           {last_offset}::bigint[], {lso}::bigint[])
        AS a(topic_id, partition, producer_id, first_offset, last_offset, last_stable_offset)
    WHERE (a.topic_id, a.partition) IN (SELECT topic_id, partition FROM fenced)
)"""


_APPEND: Final = FENCE + """, b AS (
    INSERT INTO batches (topic_id, partition, base_offset, last_offset, max_timestamp, data)
    SELECT b.* FROM unnest($7::uuid[], $8::int[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bytea[])
        AS b(topic_id, partition, base_offset, last_offset, max_timestamp, data)
    WHERE (b.topic_id, b.partition) IN (SELECT topic_id, partition FROM fenced)
)""" + insert_aborted(13) + """
SELECT topic_id, partition FROM fenced
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchRow:
    """One row of `batches`: a batch's bytes with its offsets assigned, and its max timestamp."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes
    # The broker's own record (a coordinator's state, a transaction marker): a transaction's next
    # step waits on it, so an object store's flush holding it waits out no flush.ms.
    urgent: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionWrite:
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    expected_offset: int  # partitions.next_offset as this leader last committed it
    next_offset: int
    batches: list[BatchRow]
    aborted: list[AbortedTxn] = field(default_factory=list)
    # The answer of this partition's write before this one, while it is in flight: this one is
    # committed after it, or not at all (storage/pg/write_order.py).
    after: asyncio.Future[bool] | None = field(default=None, compare=False, repr=False)


Queued = tuple[PartitionWrite, "asyncio.Future[bool]"]


class GroupCommitter:
    """Commits PartitionWrites in groups; `concurrency` statements may run at once, and a
    partition's writes commit in their order (storage/pg/write_order.py)."""

    def __init__(self, pool: Pool, node_id: int, *, concurrency: int = 2) -> None:
        self._pool = pool
        self._node_id = node_id
        self._concurrency = concurrency
        self._queue: asyncio.Queue[Queued] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._taking = asyncio.Lock()  # one worker takes a group at a time: groups follow queue order
        self._failing = False
        # Seconds a write may still take: the lease's time left once cluster mode sets it (None:
        # unbounded but for the statement timeout).
        self.time_left: Callable[[], float | None] = lambda: None
        # The lease's length (None: no lease): a write that needs no database (an object's PUT)
        # is still given up after one, since heartbeats renewing the lease would not bound it.
        self.lease_s: float | None = None
        self.statements = 0  # committed statements (how well appends are grouped)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._worker(), name=f"pg-group-commit-{i}")
                       for i in range(self._concurrency)]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        closed = KafkaError(ErrorCode.kafka_storage_error, "the broker is shutting down; nothing was written")
        while not self._queue.empty():
            _, reply = self._queue.get_nowait()
            if not reply.done():
                reply.set_exception(closed)

    async def commit(self, write: PartitionWrite) -> bool:
        """True once committed; False if the fence failed (another broker leads the partition, or
        the topic is gone). KafkaError KAFKA_STORAGE_ERROR if the outcome is unknown."""
        return await self.submit(write)

    def submit(self, write: PartitionWrite) -> asyncio.Future[bool]:
        """commit's answer as a future, the write queued now (behind write.after if that is set)."""
        reply: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if not self._tasks:
            reply.set_exception(KafkaError(ErrorCode.kafka_storage_error, "the database writer is not running"))
        else:
            self._queue.put_nowait((write, reply))
        return reply

    async def _worker(self) -> None:
        while True:
            async with self._taking:
                group = [await self._queue.get()]
                while not self._queue.empty():
                    group.append(self._queue.get_nowait())
            await self._commit_group(coalesce(group))

    async def _commit_group(self, group: list[Queued]) -> None:
        group = await after_predecessors(group)
        if group:
            await self._run_statement(group, _APPEND, self._node_id, *_arguments([w for w, _ in group]))

    async def _run_statement(self, group: list[Queued], statement: str, *arguments: object) -> None:
        """Run the group's one fenced statement (it returns the partitions that passed) and answer
        each write: committed, fenced, or an error when the outcome is unknown (module doc)."""
        try:
            rows = await within(self._fetch(statement, *arguments), self.time_left)
        except OutOfTime:  # the lease is gone, or as good as: the logs resign
            self._lease_ran_out(group, "the cluster database")
            return
        except Exception as exc:  # any failure: the outcome is unknown, the logs re-read it
            if not self._failing:
                log.warning("appends to the cluster database fail, answering KAFKA_STORAGE_ERROR: %r", exc)
            self._failing = True
            fail_all(group, KafkaError(ErrorCode.kafka_storage_error, f"the cluster database did not confirm "
                                       f"the append (it may or may not be written; retry): {exc!r}"))
            return
        if self._failing:
            self._failing = False
            log.info("appends to the cluster database succeed again")
        self.statements += 1
        passed = {(r["topic_id"], r["partition"]) for r in rows}
        for write, reply in group:
            if not reply.done():
                reply.set_result((write.topic_id, write.partition) in passed)

    def _lease_ran_out(self, group: list[Queued], what: str) -> None:
        """what did not confirm the group's writes within the lease: NOT_LEADER_OR_FOLLOWER."""
        if not self._failing:
            log.warning("%s did not confirm appends within the lease, answering NOT_LEADER_OR_FOLLOWER", what)
        self._failing = True
        fail_all(group, KafkaError(ErrorCode.not_leader_or_follower, f"{what} did not confirm the append while "
                                   "this broker's lease lasted (it may or may not be written; retry at the "
                                   "partition's leader)"))

    async def _fetch(self, statement: str, *arguments: object) -> list[Row]:
        async with self._pool.acquire() as conn:
            return await conn.fetch(statement, *arguments)


def fail_all(group: list[Queued], error: KafkaError) -> None:
    """Answer every write of the group with error (those not answered yet)."""
    for _, reply in group:
        if not reply.done():
            reply.set_exception(error)


def _arguments(writes: list[PartitionWrite]) -> list[list[object]]:
    """The statement's 17 array parameters after $1 (columns of the three unnest() sources)."""
    cols: list[list[object]] = [[] for _ in range(17)]
    for w in writes:
        for col, value in zip(cols[0:5], (w.topic_id, w.partition, w.leader_epoch, w.expected_offset,
                                          w.next_offset), strict=True):
            col.append(value)
        for b in w.batches:
            for col, value in zip(cols[5:11], (w.topic_id, w.partition, b.base_offset, b.last_offset,
                                               b.max_timestamp, b.data), strict=True):
                col.append(value)
        for a in w.aborted:
            for col, value in zip(cols[11:17], (w.topic_id, w.partition, a.producer_id, a.first_offset,
                                                a.last_offset, a.last_stable_offset), strict=True):
                col.append(value)
    return cols
