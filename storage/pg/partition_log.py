"""The log of one partition this broker leads in cluster mode, owned by one task (a LogActor).

An append runs in two steps, as the local log's write-then-flush: inside the owner task each append
of a group is validated against the producer state, given its offsets and applied (producer state,
aborted index); then the whole group goes to the database as one fenced PartitionWrite (group
commit across partitions: storage/pg/group_commit.py) and only then is acknowledged, while the
owner task sequences the next groups (storage/pg/in_flight.py). The high watermark is the last
committed next offset, so reads never serve a batch that is not durable.

Three outcomes of a group's write:
- committed: the high watermark moves, waiters wake, the producer state is periodically snapshotted;
- fenced (another broker leads at a newer epoch, or the topic is gone): every append of the group
  gets NOT_LEADER_OR_FOLLOWER, the log stops serving and tells its owner (on_fenced), which drops it;
- unknown (the database went away): KAFKA_STORAGE_ERROR, and the state the group applied in memory
  may not match the database, so the next append first rebuilds it from the database (and finds out
  whether this broker still leads); until the database answers, appends keep failing retriably.
Groups sequenced behind one that failed are not written and fail as it did (write_order.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from protocol.errors import ErrorCode, KafkaError

from ..api import AbortedTxn, AppendOrigin, FetchDataInfo, IsolationLevel, LogAppendInfo, TopicPartition
from ..log_config import LogConfig
from ..log_messages import DeleteRecordsBefore, EnforceRetention, LogMessage
from ..producer_snapshot import encode_snapshot
from ..producer_state import ProducerStateManager
from ..sequenced_log import SequencedAppend
from ..topic_checks import delete_records_target
from ..transaction_index import TransactionIndex
from .clean_rows import PgCleanResult
from .cleaning import ActiveRange, CleaningState, PgCleaningPlan, plan_cleaning
from .group_commit import BatchRow, GroupCommitter, PartitionWrite
from .in_flight import Flight, PipelinedLog
from .log_messages import ApplyCleaning, ReadCleaningState, Recover, Snapshot
from .partition_store import PartitionStore
from .pool import OutOfTime, lasting, within
from .recovery import rebuild
from .tail_cache import DEFAULT_TAIL_CACHE_BYTES, TailCache
from .timestamps import max_timestamp_offset, offset_for_timestamp

__all__ = ("PgPartitionLog",)

log = logging.getLogger(__name__)
# Producer state is snapshotted after this many bytes or batches appended, whichever comes first:
# that bounds what a new leader replays, so failover time (measured: 20,000 batch headers replay
# in about 0.4 s) stays well inside cluster.lease.ms + 2 s even with small batches.
PRODUCER_SNAPSHOT_INTERVAL_BYTES: Final = 16 << 20
PRODUCER_SNAPSHOT_INTERVAL_BATCHES: Final = 10_000
FINAL_SNAPSHOT_TIMEOUT_S: Final = 2.0
T = TypeVar("T")


class PgPartitionLog(PipelinedLog):
    def __init__(
        self,
        tp: TopicPartition,
        store: PartitionStore,
        committer: GroupCommitter,
        *,
        node_id: int,
        leader_epoch: int,
        config: LogConfig,
        producer_id_expiration_ms: int = 86_400_000,
        snapshot_interval_bytes: int = PRODUCER_SNAPSHOT_INTERVAL_BYTES,
        snapshot_interval_batches: int = PRODUCER_SNAPSHOT_INTERVAL_BATCHES,
        on_fenced: Callable[[PgPartitionLog], None] = lambda _: None,
        tail_cache_bytes: int = DEFAULT_TAIL_CACHE_BYTES,
    ) -> None:
        super().__init__(tp, config)
        self.leader_epoch = leader_epoch
        self._store = store
        self._committer = committer
        self._node_id = node_id
        self._expiration_ms = producer_id_expiration_ms
        self._snapshot_interval = snapshot_interval_bytes
        self._snapshot_interval_batches = snapshot_interval_batches
        self._on_fenced = on_fenced
        self.producer_state = ProducerStateManager(str(tp), producer_id_expiration_ms=producer_id_expiration_ms)
        self._aborted = TransactionIndex(0)
        self._high_watermark = 0  # committed: partitions.next_offset as this leader wrote it
        self._next_offset = 0  # the next offset to assign (ahead of the watermark within a group)
        self._pending: list[BatchRow] = []
        self._pending_aborted: list[AbortedTxn] = []
        self._size = 0
        self._since_snapshot = 0
        self._batches_since_snapshot = 0
        self._tail = TailCache(tail_cache_bytes)
        self._snapshot_offset = -1  # the end offset of the newest producer snapshot this leader wrote
        self._active = ActiveRange(0)
        self.fenced = False
        self.cleaning = False  # this broker's cleaner is rewriting its rows (storage/pg/log_cleaner.py)

    # -- lifecycle -------------------------------------------------------------------------------

    async def load(self) -> None:
        """Rebuild everything from the database (before start, and after an unknown outcome).
        NOT_LEADER_OR_FOLLOWER if this broker no longer leads at its epoch."""
        row = await self._store.partition_row()
        if row is None or row.leader != self._node_id or row.leader_epoch != self.leader_epoch:
            raise self._fence("another broker leads it now" if row else "the topic was deleted")
        self.producer_state = ProducerStateManager(str(self.tp), producer_id_expiration_ms=self._expiration_ms)
        self._aborted = await rebuild(self._store, self.producer_state, row.log_start_offset, row.next_offset)
        self._size = await self._store.size_bytes()
        self._log_start_offset = row.log_start_offset
        self._high_watermark = self._next_offset = row.next_offset
        self.first_dirty_offset = row.cleaner_checkpoint
        self._active = ActiveRange(row.next_offset)
        self._pending, self._pending_aborted = [], []
        self._ending.clear()
        self._tail.clear()
        self._stale = False

    async def close(self) -> None:
        """Stop serving (resignation, shutdown): a last snapshot first, so the next leader
        replays nothing."""
        await self._stop()

    async def _last(self) -> None:
        if not self.fenced and not self._stale and self._since_snapshot:
            # Bounded: a broker whose lease lapsed because the database is gone must drop its
            # partitions at once, not after a statement timeout per partition. Not cancelled
            # (within()): a cancel request on a dead network holds the caller just as long.
            await self._snapshot(lasting(FINAL_SNAPSHOT_TIMEOUT_S))

    def _fence(self, why: str) -> KafkaError:
        if not self.fenced:
            self.fenced = True
            log.info("%s: no longer the leader at epoch %d (%s); dropping it", self.tp, self.leader_epoch, why)
            self._on_fenced(self)
        return KafkaError(ErrorCode.not_leader_or_follower,
                          f"this broker no longer leads {self.tp} (epoch {self.leader_epoch}): {why}")

    def being_cleaned(self) -> bool:
        return self.cleaning

    def _check_serving(self) -> None:
        if self.fenced or self._stopping is not None:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"this broker no longer leads {self.tp}")

    # -- offsets ---------------------------------------------------------------------------------

    @property
    def topic_id(self) -> uuid.UUID:
        return self._store.topic_id

    @property
    def log_end_offset(self) -> int:
        return self._high_watermark  # committed: appends of a group in flight are not in the log yet

    @property
    def size_bytes(self) -> int:
        return self._size

    # -- append (in the owner task) ------------------------------------------------------------

    async def _append_command(self, records: bytes | memoryview, origin: AppendOrigin) -> LogAppendInfo:
        self._check_serving()
        await self._reload_if_stale()
        base = self._next_offset
        appended = self._sequence(records, origin, base)
        if not isinstance(appended, SequencedAppend):  # a retry of a written batch: nothing to write
            return appended
        parts, now_ms = appended.prepared.parts, appended.now_ms
        for i, b in enumerate(appended.batches):
            h = b.header
            data = b"".join(parts[4 * i : 4 * i + 4])  # the row's bytes: the one copy
            self._pending.append(BatchRow(base_offset=h.base_offset, last_offset=h.last_offset,
                                          max_timestamp=now_ms if appended.append_time else h.max_timestamp,
                                          data=data, urgent=origin is AppendOrigin.COORDINATOR))
            completed = self.producer_state.update(h, b.marker, now_ms)
            if completed is not None:
                self._ended(completed)
            if completed is not None and completed.is_aborted:
                self._aborted.append(completed.aborted_txn())
                self._pending_aborted.append(completed.aborted_txn())
        self._next_offset = appended.prepared.next_offset
        return self._append_info(base, appended)

    @property
    def stale(self) -> bool:
        """A write's outcome is unknown: the state is re-read before the next append."""
        return self._stale

    async def recover(self) -> None:
        """Re-read a stale log's state now (its owner calls this periodically), so that an append
        committed without confirmation becomes readable even if no further append comes."""
        await self.ask(Recover())

    async def _reload_if_stale(self) -> None:
        if self._stale and not self.fenced:
            await self._settle()  # every write sent before is answered: none lands after
            if not self.fenced:
                await self._reload()

    async def _reload(self) -> None:
        try:
            await within(self.load(), self._committer.time_left)
        except KafkaError:
            raise
        except OutOfTime as exc:  # the lease is gone, or as good as: resign as if fenced
            raise self._fence("the cluster database did not answer while this broker's lease lasted") from exc
        except Exception as exc:
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"{self.tp} cannot be read back from the cluster database: {exc!r}") from exc
        log.info("%s: state re-read from the cluster database at offset %d", self.tp, self._high_watermark)

    def _send(self, after: asyncio.Future[bool] | None) -> Flight | None:
        if not self._pending:
            return None
        write = PartitionWrite(topic_id=self._store.topic_id, partition=self.tp.partition,
                               leader_epoch=self.leader_epoch, expected_offset=self._sent_offset(self._high_watermark),
                               next_offset=self._next_offset, batches=self._pending, aborted=self._pending_aborted,
                               after=after)
        self._pending, self._pending_aborted = [], []
        return Flight(write, self._committer.submit(write), [])

    def _committed(self, write: PartitionWrite) -> None:
        self._high_watermark = write.next_offset
        batches = write.batches
        self._tail.add(batches)
        written = sum(len(b.data) for b in batches)
        self._active.on_commit(batches[0].base_offset, written, int(time.time() * 1000), self.config)
        self._size += written
        self._since_snapshot += written
        self._batches_since_snapshot += len(batches)

    def _after_acks_due(self) -> bool:
        return not self.fenced and not self._stale and (
            self._since_snapshot >= self._snapshot_interval
            or self._batches_since_snapshot >= self._snapshot_interval_batches)

    async def _after_acks(self) -> None:
        if self._after_acks_due():  # (queued after several commits, it may have run already)
            await self._snapshot(self._committer.time_left)

    async def _snapshot(self, time_left: Callable[[], float | None] | None = None) -> None:
        """A producer snapshot at the high watermark; time_left bounds the wait (a request's appends
        may be queued behind it)."""
        if self._next_offset != self._high_watermark:
            # Appends are applied but not committed: a snapshot now would hold state the database
            # may never get. Take it right after their commit instead.
            self._since_snapshot = max(self._since_snapshot, self._snapshot_interval, 1)
            return
        self._since_snapshot = self._batches_since_snapshot = 0
        state = self.producer_state
        state.map_end_offset = self._high_watermark
        write = self._store.write_snapshot(self._high_watermark, encode_snapshot(state.producers.values()))
        try:
            await (write if time_left is None else within(write, time_left))
            self._snapshot_offset = self._high_watermark
        except Exception as exc:  # the next leader replays from an older one: slower, not wrong
            log.warning("%s: producer snapshot at offset %d failed: %r", self.tp, self._high_watermark, exc)

    # -- reads (beside the owner task: rows below the high watermark never change) -----------------

    async def read(
        self, fetch_offset: int, max_bytes: int, isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        *, min_one: bool = True,
    ) -> FetchDataInfo:
        self._check_serving()
        self.check_offset(fetch_offset)
        hw, lso, start = self._high_watermark, self.last_stable_offset, self._log_start_offset
        limit = lso if isolation is IsolationLevel.READ_COMMITTED else hw
        cached = self._tail.read(fetch_offset, max_bytes, limit, min_one)
        if cached is None:
            cached = await self._guarded(self._store.read(fetch_offset, max_bytes, limit, min_one), bounded=True)
        records, upper_bound = cached
        aborted = None
        if isolation is IsolationLevel.READ_COMMITTED:
            aborted = self._aborted_between(fetch_offset, upper_bound) if records else []
        return FetchDataInfo(records=list(records), high_watermark=hw, last_stable_offset=lso,
                             log_start_offset=start, aborted_transactions=aborted)

    def _aborted_between(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        return self._aborted.collect_aborted(fetch_offset, upper_bound).aborted

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        self._check_serving()
        return await self._guarded(offset_for_timestamp(self._store, timestamp, self._log_start_offset,
                                                        self._high_watermark), bounded=True)

    async def offset_for_max_timestamp(self) -> tuple[int, int] | None:
        self._check_serving()
        return await self._guarded(max_timestamp_offset(self._store, self._high_watermark), bounded=True)

    async def _guarded(self, query: Awaitable[T], *, bounded: bool = False) -> T:
        """query's result; a failure is KAFKA_STORAGE_ERROR. bounded (a read a request or the owner task
        waits for): waited for only while the lease lasts, after which another broker may lead and the
        client should ask it."""
        try:
            return await (within(query, self._committer.time_left) if bounded else query)
        except KafkaError:
            raise
        except OutOfTime as exc:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"reading {self.tp}: no answer from the cluster "
                             "database or object store while this broker's lease lasted") from exc
        except Exception as exc:
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"reading {self.tp} from the cluster database failed: {exc!r}") from exc

    # -- cleaning (storage/pg/cleaning.py plans, storage/pg/clean_rows.py cleans in a worker) ----------

    def _cleaning_state(self) -> CleaningState:
        self._check_serving()
        producers = {pid: (e.last_data_offset, e.producer_epoch) for pid, e in self.producer_state.producers.items()}
        return CleaningState(leader_epoch=self.leader_epoch, log_start_offset=self._log_start_offset,
                             high_watermark=self._high_watermark, last_stable_offset=self.last_stable_offset,
                             first_dirty_offset=self.first_dirty_offset, producers=producers,
                             aborted=tuple(self._aborted.entries), active_start=self._active.start,
                             config=self.config)

    async def plan_cleaning(self, url: str, now_ms: int, map_capacity: int) -> PgCleaningPlan | None:
        """A pass if one is due. A pass commits only over a range a producer snapshot covers (a new
        leader never replays a cleaned range), so one is written here when the newest is older."""
        state = await self.ask(ReadCleaningState())
        plan = await self._guarded(plan_cleaning(self._store, state, url=url, node_id=self._node_id, now_ms=now_ms,
                                                 map_capacity=map_capacity), bounded=True)
        if plan is not None and self._snapshot_offset < plan.task.first_uncleanable_offset:
            await self.ask(Snapshot())
        return plan

    async def cleaned(self, result: PgCleanResult) -> None:
        """A committed pass: the rows below result.end_offset changed in the database."""
        await self.ask(ApplyCleaning(result))

    def _apply_cleaning(self, result: PgCleanResult) -> None:
        # Until now reads saw the rows as they were (the tail cache) or as they are (the database):
        # both exact, and the aborted index only ever loses entries whose data is gone.
        self._tail.drop_below(result.end_offset)
        removed = set(result.removed_aborted)
        if removed:
            self._aborted = TransactionIndex(0, [a for a in self._aborted.entries if a.last_offset not in removed])
        self._size -= result.bytes_removed
        self.first_dirty_offset = max(self.first_dirty_offset, result.end_offset)

    # -- the owner task's dispatch ---------------------------------------------------------------------

    async def _handle(self, message: LogMessage[object]) -> object:
        match message:
            case Recover():
                await self._reload_if_stale()
            case ReadCleaningState():
                return self._cleaning_state()
            case Snapshot():  # for a cleaning pass: appends wait behind it, so no longer than the lease
                await self._snapshot(self._committer.time_left)
            case ApplyCleaning(result):
                self._apply_cleaning(result)
            case DeleteRecordsBefore(offset):
                return await self._delete_records(offset)
            case EnforceRetention(now_ms):
                return await self._enforce_retention(now_ms)
            case _:
                return await super()._handle(message)
        return None

    # -- the log start offset: DeleteRecords and retention ------------------------------------------

    async def delete_records_before(self, offset: int) -> int:
        return await self.ask(DeleteRecordsBefore(offset))

    async def _delete_records(self, offset: int) -> int:
        await self._move_log_start(delete_records_target(self.tp, self.config, offset, self._high_watermark))
        return self._log_start_offset

    async def enforce_retention(self, now_ms: int) -> int:
        """Delete the batches past retention.ms / retention.bytes; the new log start offset."""
        return await self.ask(EnforceRetention(now_ms))

    async def _enforce_retention(self, now_ms: int) -> int:
        self.producer_state.remove_expired_producers(now_ms)
        cutoff = now_ms - self.config.retention_ms if self.config.retention_ms >= 0 else None
        size = self.config.retention_bytes if self.config.retention_bytes >= 0 else None
        # Bounded by the lease as a request's read: the owner task waits for it, and appends behind it.
        target = await self._guarded(self._store.retention_start(cutoff, size, self._high_watermark), bounded=True)
        if target is not None and target > self._log_start_offset:
            await self._move_log_start(min(target, self._high_watermark))
        return self._log_start_offset

    async def _move_log_start(self, target: int) -> None:
        if target <= self._log_start_offset:
            return
        deleted = await self._guarded(self._store.move_log_start(self._node_id, self.leader_epoch, target))
        if deleted is None:
            raise self._fence("its leader epoch changed in the database")
        self._log_start_offset = target
        self._size -= deleted
        # The producers of the deleted batches stay known from memory; a snapshot at the watermark
        # keeps them known to the next leader too (it replays from there, not from deleted rows).
        await self._snapshot()
        log.info("%s: log start offset %d (%d bytes deleted)", self.tp, target, deleted)
