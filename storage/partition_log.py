"""The log of one partition, owned by one task (an actor): appends, reads, roll and retention.

Batches are moved as bytes (storage/log_append.py lays out one writev per append); the owner task
is storage/log_actor.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Final

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import RecordBatchHeader

from .api import AppendOrigin, FetchDataInfo, IsolationLevel, LogAppendInfo, TopicPartition
from .cleaner import swap
from .cleaner.clean_pass import CleanResult
from .cleaner.cleanable import CleaningPlan, dirty_ratio_now, plan_cleaning, read_checkpoint, swap_in
from .fs import LOCAL_FS, FileSystem
from .local_retention import delete_records_before, enforce_retention
from .log_append import PendingBatch
from .log_config import LogConfig
from .log_messages import (
    DeleteRecordsBefore,
    DirtyRatio,
    EnforceRetention,
    Flush,
    LogMessage,
    MaxTimestampOffset,
    OffsetForTimestamp,
    PlanCleaning,
    Read,
    SwapCleaned,
)
from .log_segment import LogSegment
from .log_start_offset import read_log_start_offset
from .log_transactions import LogTransactions
from .segment_reads import max_timestamp_offset, offset_for_timestamp, read_batches, segment_index
from .sequenced_log import SequencedAppend, SequencedLog
from .transaction_index import TransactionIndexFile

__all__ = ("LocalPartitionLog",)

log = logging.getLogger(__name__)
# Producer state is snapshotted after this many bytes appended (and at every roll), which bounds
# what recovery after a crash replays. Kafka has no such key: it snapshots at roll only.
PRODUCER_SNAPSHOT_INTERVAL_BYTES: Final = 16 << 20


class LocalPartitionLog(SequencedLog):
    """PartitionLog backed by segment files under <log.dirs>/<topic>-<partition>/.

    An append is all or nothing: if any write fails (segment, index, time index, .txnindex), every
    file is cut back and the offsets restored, and the caller gets KAFKA_STORAGE_ERROR; the log goes
    on once the disk has room. If undoing fails too the log goes offline (every later call answers
    KAFKA_STORAGE_ERROR), as Kafka takes a failed log dir offline. fsync, file creation, renames
    and deletions run on worker threads while the owner task waits, so the event loop stays free.
    """

    def __init__(
        self,
        tp: TopicPartition,
        directory: Path,
        config: LogConfig,
        producer_id_expiration_ms: int = 86_400_000,
        *,
        fs: FileSystem = LOCAL_FS,
        snapshot_interval_bytes: int = PRODUCER_SNAPSHOT_INTERVAL_BYTES,
    ) -> None:
        super().__init__(tp, config)
        self.directory = directory
        self.segments: list[LogSegment] = []
        self._fs = fs
        # Producer state, LSO and aborted-transaction indexes (storage/log_transactions.py).
        self.txns = LogTransactions(str(tp), directory, producer_id_expiration_ms, fs)
        self.producer_state = self.txns.state  # the same for the log's life
        self._unflushed = 0
        self._last_flush = time.monotonic()
        self._snapshot_interval = snapshot_interval_bytes
        self._since_snapshot = 0
        self._closed = False
        self.closed_cleanly = False
        self._write_failing = False

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self, clean_shutdown: bool) -> None:
        """Load segments (synchronously, before serving). The newest segment is fully scanned
        and its torn tail truncated unless the last shutdown was clean."""
        self.directory.mkdir(parents=True, exist_ok=True)
        swap.recover(self.directory, self._fs)  # a cleaner swap a crash interrupted
        self.first_dirty_offset = read_checkpoint(self.directory)
        bases = sorted(int(p.stem) for p in self.directory.glob("*.log") if p.stem.isdigit())
        for i, base in enumerate(bases):
            seg = LogSegment(self.directory, base, self.config.index_interval_bytes, self._fs)
            seg.load(recover=(i == len(bases) - 1 and not clean_shutdown))
            self.segments.append(seg)
        if not self.segments:
            self.segments.append(LogSegment(self.directory, 0, self.config.index_interval_bytes, self._fs))
        # DeleteRecords may have moved the start into the first segment (log_start_offset.py).
        checkpoint = min(read_log_start_offset(self.directory) or 0, self.log_end_offset)
        self._log_start_offset = max(self.segments[0].base_offset, checkpoint)
        self.txns.recover(self.segments, self.log_end_offset)

    async def close(self) -> None:
        await self._stop()
        await asyncio.to_thread(self._close_sync)

    async def _last(self) -> None:
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._offline is None:
                self.active.flush()
                self.txns.close(self.log_end_offset)
                self.closed_cleanly = True
        except OSError as exc:
            # The next start then recovers this log as after a crash (LogManager leaves no
            # clean-shutdown marker): no traceback, no lost data.
            log.warning("%s: closing without a final flush and snapshot: %s", self.tp, exc)
        finally:
            self.close_files()

    def close_files(self) -> None:
        """Close every file without flushing (an unstarted log being discarded, or a crash)."""
        for ix in self.txns.indexes:
            ix.close()
        for seg in self.segments:
            seg.close()

    # -- offsets (read-only views of actor state) -----------------------------------------------

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- public face -----------------------------------------------------------------------------

    async def read(self, fetch_offset: int, max_bytes: int,
                   isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED, *,
                   min_one: bool = True) -> FetchDataInfo:
        if self._idle():  # the fetch fast path: no message, no event-loop turn
            return self.read_sync(fetch_offset, max_bytes, isolation, min_one)
        return await self.ask(Read(fetch_offset, max_bytes, isolation, min_one))

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return await self.ask(OffsetForTimestamp(timestamp))

    async def enforce_retention(self, now_ms: int) -> int:
        return await self.ask(EnforceRetention(now_ms))

    async def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to offset (-1: the high watermark), durably,
        and drop the segments wholly below it. Returns the log start offset (the low watermark)."""
        return await self.ask(DeleteRecordsBefore(offset))

    async def flush(self) -> None:
        await self.ask(Flush())

    async def offset_for_max_timestamp(self) -> tuple[int, int] | None:
        return await self.ask(MaxTimestampOffset())

    # -- cleaning (storage/cleaner/) ---------------------------------------------------------------

    async def plan_cleaning(self, now_ms: int, map_capacity: int) -> CleaningPlan | None:
        return await self.ask(PlanCleaning(now_ms, map_capacity))

    async def swap_cleaned(self, result: CleanResult) -> int:
        return await self.ask(SwapCleaned(result))

    async def dirty_ratio(self) -> float:
        return await self.ask(DirtyRatio())

    # -- the owner task's dispatch -------------------------------------------------------------------

    async def _handle(self, message: LogMessage[object]) -> object:
        match message:
            case Read(fetch_offset, max_bytes, isolation, min_one):
                return self.read_sync(fetch_offset, max_bytes, isolation, min_one)
            case OffsetForTimestamp(timestamp):
                return offset_for_timestamp(self.segments, timestamp, self._log_start_offset)
            case MaxTimestampOffset():
                return self.max_timestamp_offset()
            case EnforceRetention(now_ms):
                return await enforce_retention(self, now_ms)
            case DeleteRecordsBefore(offset):
                return await delete_records_before(self, offset)
            case Flush():
                await self._flush()
                return None
            case PlanCleaning(now_ms, map_capacity):
                return plan_cleaning(self, now_ms, map_capacity)
            case SwapCleaned(result):
                return await swap_in(self, result)
            case DirtyRatio():
                return dirty_ratio_now(self)
            case _:
                return await super()._handle(message)

    @property
    def fs(self) -> FileSystem:
        return self._fs

    def go_offline(self, why: str) -> KafkaError:
        return self._go_offline(why)

    # -- append (in the owner task) -----------------------------------------------------------

    async def _append_command(self, records: bytes | memoryview, origin: AppendOrigin) -> LogAppendInfo:
        if self._needs_roll(len(records)):
            await self._roll()
        return self._append(records, origin)

    def _append_at_once(self, records: bytes | memoryview, origin: AppendOrigin) -> LogAppendInfo | None:
        return None if self._needs_roll(len(records)) else self._append(records, origin)

    def _acks_due(self) -> bool:
        return self._flush_due()

    async def _before_acks(self) -> None:
        await self._maybe_flush()

    def _after_acks_due(self) -> bool:
        return self._since_snapshot >= self._snapshot_interval

    async def _after_acks(self) -> None:
        if self._after_acks_due():  # queued twice, or a roll snapshotted meanwhile
            await self._snapshot()

    def _append(self, records: bytes | memoryview, origin: AppendOrigin) -> LogAppendInfo:
        base = self.log_end_offset
        appended = self._sequence(records, origin, base)
        if not isinstance(appended, SequencedAppend):  # a retry of a written batch: nothing to write
            return appended
        prepared = appended.prepared
        self._write(prepared.parts, prepared.assigned, appended.batches, len(records), appended.now_ms)
        self._unflushed += prepared.next_offset - base
        self._since_snapshot += len(records)
        return self._append_info(base, appended)

    def _write(
        self,
        parts: list[bytes | memoryview],
        assigned: list[tuple[int, RecordBatchHeader]],
        written: list[PendingBatch],
        size: int,
        now_ms: int,
    ) -> None:
        """Write the batches and apply them to the producer state, all or nothing."""
        seg = self.active
        seg_mark, txn_mark = seg.mark(), self.txns.mark(written)
        try:
            seg.append(parts, assigned, size)
            self.txns.after_write(written, now_ms)
        except OSError as exc:
            try:
                seg.rollback(seg_mark)
                self.txns.rollback(txn_mark)
            except OSError as undo:
                raise self._go_offline(f"writing at offset {seg_mark.next_offset} failed ({exc}) and undoing "
                                       f"it failed ({undo})") from undo
            if not self._write_failing:  # once per episode, not per retry of every client
                log.warning("%s: appends fail and are undone, answering KAFKA_STORAGE_ERROR: %s", self.tp, exc)
            self._write_failing = True
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"writing to {self.tp} at offset {seg_mark.next_offset} failed, nothing was "
                             f"written: {exc}") from exc
        if self._write_failing:
            self._write_failing = False
            log.info("%s: appends succeed again at offset %d", self.tp, seg_mark.next_offset)

    def _needs_roll(self, incoming: int) -> bool:
        seg = self.active
        too_big = seg.size > 0 and seg.size + incoming > self.config.segment_bytes
        too_old = seg.size > 0 and time.time() * 1000 - seg.created_ms > self.config.segment_ms
        return too_big or too_old

    async def _roll(self) -> LogSegment:
        """A new active segment at the log end. The old one's flush, the new files and the
        producer snapshot are made on a worker thread (Kafka flushes rolled segments off the
        request path too); if any step fails, the new files are removed and the log stays as it
        was."""
        old, base = self.active, self.log_end_offset
        snapshot = self.txns.snapshot(base)

        def files() -> tuple[LogSegment, TransactionIndexFile]:
            old.flush()
            seg = LogSegment.create(self.directory, base, self.config.index_interval_bytes, self._fs)
            try:
                return seg, self.txns.roll_files(base, snapshot)
            except OSError:
                seg.close()
                seg.delete_files()
                raise

        try:
            seg, ix = await asyncio.to_thread(files)
        except OSError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"cannot roll {self.tp} to a new segment at offset {base}: {exc}") from exc
        self.segments.append(seg)
        self.txns.on_roll(ix)
        self._since_snapshot = 0
        log.debug("%s: rolled new segment at offset %d", self.tp, base)
        return seg

    def _flush_due(self) -> bool:
        due_ms = self.config.flush_ms is not None and (
            (time.monotonic() - self._last_flush) * 1000 >= self.config.flush_ms
        )
        return self._unflushed >= self.config.flush_messages or due_ms

    async def _maybe_flush(self) -> None:
        if self._flush_due():
            await self._flush()

    async def _flush(self) -> None:
        try:
            await asyncio.to_thread(self.active.flush)
        except OSError as exc:
            # After a failed fsync the page cache may have dropped the data: nothing written
            # since the last good flush can be trusted, so the log goes offline (as Kafka does).
            raise self._go_offline(f"fsync of {self.active.log_path} failed: {exc}") from exc
        self._unflushed = 0
        self._last_flush = time.monotonic()

    async def _snapshot(self) -> None:
        """Snapshot the producer state every snapshot_interval_bytes appended, so recovery after
        a crash replays at most that much (Kafka snapshots only at roll, with 1 GiB segments).
        Runs after the appends that crossed the interval are acknowledged (_after_acks)."""
        self._since_snapshot = 0
        path, data = self.txns.snapshot(self.log_end_offset)
        try:
            await asyncio.to_thread(self.txns.write_snapshot, path, data, self.active.base_offset)
        except OSError as exc:
            log.warning("%s: producer snapshot %s failed (recovery falls back to an older one): %s",
                        self.tp, path.name, exc)

    # -- read -----------------------------------------------------------------------------------

    def read_sync(self, fetch_offset: int, max_bytes: int, isolation: IsolationLevel,
                  min_one: bool = True) -> FetchDataInfo:
        self.check_offset(fetch_offset)
        hw, lso = self.high_watermark, self.last_stable_offset
        committed = isolation is IsolationLevel.READ_COMMITTED
        end = lso if committed else hw
        records, upper_bound = read_batches(self.segments, fetch_offset, max_bytes, end, min_one)
        aborted = None
        if committed:
            # Kafka's upper bound: the offset after the last returned batch.
            aborted = self.txns.collect_aborted(fetch_offset, upper_bound) if records else []
        return FetchDataInfo(
            records=[records] if records else [],
            high_watermark=hw,
            last_stable_offset=lso,
            log_start_offset=self._log_start_offset,
            aborted_transactions=aborted,
            older_segment=self._on_older_segment(fetch_offset, end),
        )

    def _on_older_segment(self, fetch_offset: int, end: int) -> bool:
        segments = self.segments
        # A consumer at the tail reads the last segment: answered without a search.
        if fetch_offset >= end or not segments or segments[-1].base_offset <= fetch_offset:
            return False
        return segment_index(segments, fetch_offset) < segment_index(segments, end)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        return max_timestamp_offset(self.segments)
