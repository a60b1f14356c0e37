"""The log of one partition, owned by one task (an actor): appends, reads, roll and retention.

Batches are moved as bytes. An append patches each batch's base offset and partition leader
epoch (both outside the CRC) while writing, with writev over memoryviews, so the request's bytes
are never copied or re-encoded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, assert_never

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import LOG_OVERHEAD, RecordBatchHeader, iter_batches, stamp_log_append_time

from .api import (
    ActiveProducer,
    AppendOrigin,
    FetchDataInfo,
    IsolationLevel,
    LogAppendInfo,
    TopicPartition,
)
from .log_config import LogConfig
from .log_retention import deletable_segments
from .log_segment import LogSegment
from .log_start_offset import read_log_start_offset, write_log_start_offset
from .log_transactions import LogTransactions, PendingBatch
from .producer_state import BatchMetadata, ProducerStateEntry
from .segment_reads import max_timestamp_offset, offset_for_timestamp, read_batches

__all__ = ("LocalPartitionLog",)

log = logging.getLogger(__name__)
_I64: Final = struct.Struct(">q")
_I32: Final = struct.Struct(">i")
LEADER_EPOCH: Final = 0  # a single node never changes leader


@dataclass(frozen=True, slots=True)
class _Append:
    records: bytes
    origin: AppendOrigin
    reply: asyncio.Future[LogAppendInfo]


@dataclass(frozen=True, slots=True)
class _Call:
    """Run a synchronous function on the log's state inside the owner task."""

    fn: Callable[[], Any]
    reply: asyncio.Future[Any]


_Command = _Append | _Call


class LocalPartitionLog:
    """PartitionLog backed by segment files under <log.dirs>/<topic>-<partition>/."""

    def __init__(
        self,
        tp: TopicPartition,
        directory: Path,
        config: LogConfig,
        producer_id_expiration_ms: int = 86_400_000,
    ) -> None:
        self.tp = tp
        self.directory = directory
        self.config = config
        self.segments: list[LogSegment] = []
        # Producer state, LSO and aborted-transaction indexes (storage/log_transactions.py).
        self.txns = LogTransactions(str(tp), directory, producer_id_expiration_ms)
        self._queue: asyncio.Queue[_Command] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._waiters: set[asyncio.Future[None]] = set()
        self._unflushed = 0
        self._last_flush = time.monotonic()
        self._log_start_offset = 0
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self, clean_shutdown: bool) -> None:
        """Load segments (synchronously, before serving). The newest segment is fully scanned
        and its torn tail truncated unless the last shutdown was clean."""
        self.directory.mkdir(parents=True, exist_ok=True)
        bases = sorted(int(p.stem) for p in self.directory.glob("*.log") if p.stem.isdigit())
        for i, base in enumerate(bases):
            seg = LogSegment(self.directory, base, self.config.index_interval_bytes)
            seg.load(recover=(i == len(bases) - 1 and not clean_shutdown))
            self.segments.append(seg)
        if not self.segments:
            self.segments.append(LogSegment(self.directory, 0, self.config.index_interval_bytes))
        # DeleteRecords may have moved the start into the first segment (log_start_offset.py).
        checkpoint = min(read_log_start_offset(self.directory) or 0, self.log_end_offset)
        self._log_start_offset = max(self.segments[0].base_offset, checkpoint)
        self.txns.recover(self.segments, self.log_end_offset)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"log-{self.tp}")
        self._task.add_done_callback(self._on_done)

    async def close(self) -> None:
        if self._task is not None:
            await self.call(self._close_sync)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        else:
            self._close_sync()

    def _close_sync(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.active.flush()
        self.txns.close(self.log_end_offset)
        for seg in self.segments:
            seg.close()

    def _on_done(self, task: asyncio.Task[None]) -> None:
        # Supervision: if the owner task dies, nobody may wait forever on it.
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log.error("log actor for %s died: %r", self.tp, exc)
        while not self._queue.empty():
            cmd = self._queue.get_nowait()
            if not cmd.reply.done():
                cmd.reply.set_exception(KafkaError(ErrorCode.not_leader_or_follower, f"{self.tp} is closed"))

    # -- offsets (read-only views of actor state) -----------------------------------------------

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        # Never below the log start: DeleteRecords may cut into an open transaction (Kafka's
        # updateFirstUnstableOffset takes the same max).
        return max(self.txns.last_stable_offset(self.high_watermark), self._log_start_offset)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- public face -----------------------------------------------------------------------------

    async def append(self, records: bytes, origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        reply: asyncio.Future[LogAppendInfo] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Append(records, origin, reply))
        return await reply

    async def call(self, fn: Callable[[], Any]) -> Any:
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Call(fn, reply))
        return await reply

    async def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> FetchDataInfo:
        return await self.call(lambda: self.read_sync(fetch_offset, max_bytes, isolation))

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return await self.call(lambda: self._offset_for_timestamp(timestamp))

    async def enforce_retention(self, now_ms: int) -> int:
        return await self.call(lambda: self._enforce_retention(now_ms))

    async def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to offset (-1: the high watermark), durably,
        and drop the segments wholly below it. Returns the log start offset (the low watermark)."""
        return await self.call(lambda: self._increment_log_start_offset(offset))

    async def flush(self) -> None:
        await self.call(self._flush)

    async def offset_for_max_timestamp(self) -> tuple[int, int] | None:
        return await self.call(self.max_timestamp_offset)

    async def update_config(self, config: LogConfig) -> None:
        """Adopt new topic configs between two commands, never in the middle of one."""
        await self.call(lambda: self._set_config(config))

    def _set_config(self, config: LogConfig) -> None:
        self.config = config

    async def active_producers(self) -> list[ActiveProducer]:
        return await self.call(lambda: [_active_producer(e) for e in self.txns.state.producers.values()])

    def has_open_transaction(self, producer_id: int) -> bool:
        entry = self.txns.state.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None

    def add_waiter(self, waiter: asyncio.Future[None]) -> None:
        """Wake waiter (set its result) on the next change of the high watermark or LSO."""
        self._waiters.add(waiter)

    def remove_waiter(self, waiter: asyncio.Future[None]) -> None:
        self._waiters.discard(waiter)

    # -- the owner task ---------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            cmd = await self._queue.get()
            wrote = False
            while True:
                wrote |= self._execute(cmd)
                if self._queue.empty():
                    break
                cmd = self._queue.get_nowait()
            if wrote:
                self._maybe_flush()
                self._wake_waiters()

    def _execute(self, cmd: _Command) -> bool:
        if cmd.reply.done():
            return False
        try:
            match cmd:
                case _Append():
                    cmd.reply.set_result(self._append(cmd.records, cmd.origin))
                    return True
                case _Call():
                    cmd.reply.set_result(cmd.fn())
                    return False
                case _:
                    assert_never(cmd)
        except Exception as exc:
            cmd.reply.set_exception(exc)
            return False

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # -- append ---------------------------------------------------------------------------------

    def validate(self, records: bytes, origin: AppendOrigin) -> list[tuple[int, RecordBatchHeader]]:
        headers = list(iter_batches(records))
        if not headers:
            raise KafkaError(ErrorCode.corrupt_message, "produce request holds no record batch")
        for _, header in headers:
            if header.size > self.config.max_message_bytes:
                raise KafkaError(
                    ErrorCode.message_too_large,
                    f"record batch of {header.size} bytes exceeds max.message.bytes="
                    f"{self.config.max_message_bytes} of {self.tp}",
                )
            if origin is AppendOrigin.CLIENT and header.is_control:
                raise KafkaError(ErrorCode.invalid_record, "clients may not write control batches")
        return headers

    def _append(self, records: bytes, origin: AppendOrigin) -> LogAppendInfo:
        headers = self.validate(records, origin)
        view = memoryview(records)
        batches = self.txns.pending(view, headers)
        duplicate = self.txns.check(batches, origin)
        if duplicate is not None:  # a retry of a written batch: answer as before, write nothing
            return self._duplicate_info(duplicate)
        self._maybe_roll(len(records))
        base = offset = self.log_end_offset
        parts: list[bytes | memoryview] = []
        assigned: list[tuple[int, RecordBatchHeader]] = []
        now_ms = int(time.time() * 1000)
        append_time = self.config.message_timestamp_type == "LogAppendTime"
        for pos, header in headers:
            end = pos + header.size
            parts += (_I64.pack(offset), view[pos + 8 : pos + 12], _I32.pack(LEADER_EPOCH))
            if append_time:
                parts.append(memoryview(stamp_log_append_time(view[pos:end], now_ms))[LOG_OVERHEAD + 4 :])
            else:
                parts.append(view[pos + LOG_OVERHEAD + 4 : end])
            assigned.append((pos, _with_offset(header, offset)))
            offset += header.last_offset_delta + 1
        self._write(parts, assigned, len(records))
        self.txns.after_write(
            [PendingBatch(h, b.marker) for (_, h), b in zip(assigned, batches, strict=True)]
        )
        self._unflushed += offset - base
        return LogAppendInfo(
            base_offset=base,
            last_offset=offset - 1,
            log_append_time=now_ms if append_time else -1,
            log_start_offset=self._log_start_offset,
        )

    def _duplicate_info(self, duplicate: BatchMetadata) -> LogAppendInfo:
        append_time = self.config.message_timestamp_type == "LogAppendTime"
        return LogAppendInfo(
            base_offset=duplicate.first_offset,
            last_offset=duplicate.last_offset,
            log_append_time=duplicate.timestamp if append_time else -1,
            log_start_offset=self._log_start_offset,
            duplicate=True,
        )

    def _write(self, parts: list[bytes | memoryview], assigned: list[tuple[int, RecordBatchHeader]], size: int) -> None:
        seg = self.active
        position = seg.size
        written = os.writev(seg._fd, parts)  # noqa: SLF001 - the segment's own fd, owned by this actor
        if written != size:
            os.ftruncate(seg._fd, position)  # noqa: SLF001
            raise OSError(f"short write to {seg.log_path}: {written} of {size} bytes")
        seg.size += written
        for rel, header in assigned:
            seg._index_batch(position + rel, header)  # noqa: SLF001

    def _maybe_roll(self, incoming: int) -> None:
        seg = self.active
        too_big = seg.size > 0 and seg.size + incoming > self.config.segment_bytes
        too_old = seg.size > 0 and time.time() * 1000 - seg.created_ms > self.config.segment_ms
        if too_big or too_old:
            self.roll()

    def roll(self) -> LogSegment:
        self.active.flush()
        seg = LogSegment(self.directory, self.log_end_offset, self.config.index_interval_bytes)
        self.segments.append(seg)
        self.txns.on_roll(seg.base_offset)
        log.debug("%s: rolled new segment at offset %d", self.tp, seg.base_offset)
        return seg

    def _maybe_flush(self) -> None:
        due_ms = self.config.flush_ms is not None and (
            (time.monotonic() - self._last_flush) * 1000 >= self.config.flush_ms
        )
        if self._unflushed >= self.config.flush_messages or due_ms:
            self._flush()

    def _flush(self) -> None:
        self.active.flush()
        self._unflushed = 0
        self._last_flush = time.monotonic()

    # -- read -----------------------------------------------------------------------------------

    def check_offset(self, fetch_offset: int) -> None:
        if fetch_offset < self._log_start_offset or fetch_offset > self.log_end_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {fetch_offset} is outside [{self._log_start_offset}, {self.log_end_offset}] of {self.tp}",
            )

    def read_sync(self, fetch_offset: int, max_bytes: int, isolation: IsolationLevel) -> FetchDataInfo:
        self.check_offset(fetch_offset)
        limit = self.last_stable_offset if isolation is IsolationLevel.READ_COMMITTED else self.high_watermark
        records, upper_bound = read_batches(self.segments, fetch_offset, max_bytes, limit)
        aborted = None
        if isolation is IsolationLevel.READ_COMMITTED:
            # Kafka's upper bound: the offset after the last returned batch.
            aborted = self.txns.collect_aborted(fetch_offset, upper_bound) if records else []
        return FetchDataInfo(
            records=[records] if records else [],
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self._log_start_offset,
            aborted_transactions=aborted,
        )

    def _offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return offset_for_timestamp(self.segments, timestamp, self._log_start_offset)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        return max_timestamp_offset(self.segments)

    # -- retention --------------------------------------------------------------------------------

    def _increment_log_start_offset(self, offset: int) -> int:
        if "delete" not in self.config.cleanup_policy.split(","):
            raise KafkaError(ErrorCode.policy_violation, f"records of {self.tp} cannot be deleted: "
                             f"cleanup.policy is {self.config.cleanup_policy}")
        target = self.high_watermark if offset == -1 else offset
        if not 0 <= target <= self.high_watermark:
            raise KafkaError(ErrorCode.offset_out_of_range, f"cannot move the log start offset of {self.tp} to "
                             f"{offset}: it is outside [0, {self.high_watermark}]")
        if target > self._log_start_offset:
            write_log_start_offset(self.directory, self.tp.topic, self.tp.partition, target)
            self._log_start_offset = target
            self._delete_segments(deletable_segments(self.segments, self.config, 0, target, retention=False))
        return self._log_start_offset

    def _enforce_retention(self, now_ms: int) -> int:
        """Delete whole non-active segments past retention.ms or retention.bytes; count deleted."""
        self.txns.remove_expired_producers(now_ms)
        count = deletable_segments(self.segments, self.config, now_ms, self._log_start_offset, retention=True)
        self._delete_segments(count)
        return count

    def _delete_segments(self, count: int) -> None:
        for _ in range(count):
            seg = self.segments.pop(0)
            # Retention moves the start to the first kept segment; DeleteRecords may be past it.
            self._log_start_offset = max(self._log_start_offset, self.segments[0].base_offset)
            self.txns.on_delete_segment(seg.base_offset)
            seg.delete()
            log.info("%s: deleted segment %d; log start offset %d", self.tp, seg.base_offset, self._log_start_offset)


def _active_producer(e: ProducerStateEntry) -> ActiveProducer:
    return ActiveProducer(
        producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
        last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
        current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
    )


def _with_offset(header: RecordBatchHeader, offset: int) -> RecordBatchHeader:
    return replace(header, base_offset=offset)
