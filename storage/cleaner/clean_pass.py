"""One cleaning pass over a partition's closed segments, run in a worker process.

The partition log's owner task describes what to clean (a CleanTask: plain data); this module reads
the closed segments' files, builds the map of each key's latest offset over the dirty section,
writes the cleaned segments into <partition>/cleaner-tmp/ and returns what it wrote (a CleanResult).
It never touches the live segment files: swap.py replaces them, in the owner task.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from protocol.control import read_end_txn_marker
from protocol.errors import CorruptRecordError
from protocol.record_batch import HEADER_SIZE, RecordBatchHeader, iter_batches

from ..api import AbortedTxn
from ..log_segment import LogSegment
from ..transaction_index import TransactionIndexFile
from .batch_filter import RawRecord, build_filtered_batch, decode_raw_records, delete_horizon_ms, empty_batch
from .offset_map import BYTES_PER_MAP_ENTRY, OffsetMap
from .throttler import UNLIMITED, Throttler
from .transactions import CleanedTransactions

__all__ = ("BYTES_PER_MAP_ENTRY", "CLEANER_TMP", "CleanResult", "CleanTask", "CleanedGroup", "SegmentInfo",
           "run_clean_pass")

CLEANER_TMP: Final = "cleaner-tmp"
WORKER_NICENESS: Final = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentInfo:
    base_offset: int
    end_offset: int  # the next segment's base offset
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanRules:
    """What a pass's record filter (_Filter) reads: both backends' tasks carry it."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    aborted: tuple[AbortedTxn, ...]
    # producer id -> (last data offset or -1, producer epoch), of producers the log still tracks
    active_producers: dict[int, tuple[int, int]]
    delete_retention_ms: int
    map_capacity: int
    now_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanTask(CleanRules):
    directory: str
    segments: tuple[SegmentInfo, ...]  # closed segments from the log start up to first_uncleanable
    segment_bytes: int
    index_interval_bytes: int
    # This worker's share of log.cleaner.io.max.bytes.per.second and of log.cleaner.io.buffer.size
    # (Kafka's: half of a thread's share for reading, half for writing).
    io_max_bytes_per_second: float = UNLIMITED
    io_buffer_size: int = 1 << 18


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanedGroup:
    base_offset: int
    replaces: tuple[int, ...]  # base offsets of the old segments this one replaces
    size: int


@dataclass(slots=True, kw_only=True)
class CleanResult:
    groups: list[CleanedGroup] = field(default_factory=list)
    end_offset: int = 0  # the next pass's first dirty offset
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    throttled_s: float = 0.0  # slept to stay under log.cleaner.io.max.bytes.per.second
    cpu_s: float = 0.0  # the worker's CPU time: the pass's cost, whatever the machine's load


@dataclass(frozen=True, slots=True)
class _PassIO:
    chunk: int  # bytes read or written at a time
    throttler: Throttler

    @classmethod
    def of(cls, task: CleanTask) -> _PassIO:
        return cls(max(task.io_buffer_size, HEADER_SIZE), Throttler(task.io_max_bytes_per_second))


class _Orphaned(Exception):
    """The process that asked for this pass is gone (a broker killed with -9)."""


_parent: int | None = None


def _iter_file(path: Path, size: int, io: _PassIO) -> Iterator[tuple[RecordBatchHeader, memoryview]]:
    """Every batch of a closed segment file with its bytes, read io.chunk bytes at a time."""
    with open(path, "rb") as f:
        pos = 0
        while pos < size:
            # A worker outliving its broker must stop before the next broker reuses cleaner-tmp/.
            if _parent is not None and os.getppid() != _parent:
                raise _Orphaned(f"parent process {_parent} is gone")
            chunk = memoryview(os.pread(f.fileno(), io.chunk, pos))
            first = RecordBatchHeader.parse(chunk) if len(chunk) >= HEADER_SIZE else None
            if first is not None and len(chunk) < first.size <= size - pos:  # larger than a chunk
                chunk = memoryview(os.pread(f.fileno(), first.size, pos))
            io.throttler.maybe_throttle(len(chunk))
            consumed = 0
            # CRCs are checked: a pass rewrites what it reads, so it must never launder corruption.
            for rel, h in iter_batches(chunk, verify_crc=True, end=_whole(chunk)):
                yield h, chunk[rel : rel + h.size]
                consumed = rel + h.size
            if consumed == 0:  # never skip what cannot be read: the pass fails instead
                raise CorruptRecordError(f"{path}: no readable batch at byte {pos} of {size}")
            pos += consumed


def _whole(chunk: memoryview) -> int:
    """The end of the last whole batch in chunk."""
    pos = 0
    while pos + HEADER_SIZE <= len(chunk):
        size = RecordBatchHeader.parse(chunk, pos).size
        if size < HEADER_SIZE or pos + size > len(chunk):
            break
        pos += size
    return pos


def _control_type(header: RecordBatchHeader, batch: memoryview) -> int | None:
    if header.records_count == 0:
        return None
    marker = read_end_txn_marker(batch, 0, header)
    return -1 if marker is None else int(marker.control_type)


def build_offset_map(task: CleanTask, directory: Path, io: _PassIO) -> tuple[OffsetMap, int]:
    """Each key's latest offset in the dirty section (aborted records and markers left out), and
    the offset mapping reached (the map may fill up first). The section ends at the first
    uncleanable offset even inside a segment: past the LSO lie open transactions, whose records
    must not supersede committed ones before they commit."""
    keys = OffsetMap(task.map_capacity)
    txns = CleanedTransactions()
    txns.add_aborted(task.aborted)
    end = task.first_uncleanable_offset
    latest = task.first_dirty_offset - 1
    for seg in task.segments:
        if seg.end_offset <= task.first_dirty_offset:
            continue
        for h, batch in _iter_file(directory / f"{seg.base_offset:020d}.log", seg.size, io):
            if h.base_offset >= end:
                break
            if h.is_control:
                txns.on_marker(h, _control_type(h, batch))
            elif not txns.on_batch(h) and h.last_offset >= task.first_dirty_offset:
                if keys.full:
                    keys.freeze()
                    return keys, latest
                keys.add_batch(batch, h, task.first_dirty_offset)
            latest = max(latest, h.last_offset)
        latest = max(latest, min(seg.end_offset, end) - 1)
    keys.freeze()
    return keys, latest


class KeyOffsets(Protocol):
    def get(self, key: bytes, default: int, /) -> int: ...


class _Filter:
    """Kafka's cleaner RecordFilter for one pass: which batches and records stay. keys is an
    OffsetMap (this backend) or a plain dict of key -> latest offset."""

    def __init__(self, task: CleanRules, keys: KeyOffsets, latest: int) -> None:
        self.task, self.keys, self.latest = task, keys, latest
        self.txns = CleanedTransactions()
        self.txns.add_aborted(task.aborted)

    def _last_of_producer(self, h: RecordBatchHeader) -> bool:
        last = self.task.active_producers.get(h.producer_id)
        if last is None or not h.has_producer_id:
            return False
        last_data_offset, epoch = last
        if last_data_offset >= 0:
            return h.last_offset == last_data_offset
        return h.is_control and h.producer_epoch == epoch

    def filter(self, h: RecordBatchHeader, batch: memoryview, result: CleanResult) -> bytes | memoryview | None:
        horizon = delete_horizon_ms(h)
        if h.is_control:
            can_discard = self.txns.on_marker(h, _control_type(h, batch))
            discard_records = can_discard and horizon is not None and horizon <= self.task.now_ms
        else:
            can_discard = discard_records = self.txns.on_batch(h)
        retain_empty = self._last_of_producer(h) or h.last_offset + 1 == self.task.first_uncleanable_offset
        if discard_records and not retain_empty:
            return None
        if not discard_records and self._mapped(h, horizon):
            decided, kept = self._by_count(h, batch, result, retain_empty)
            if decided:
                return kept
        return self._by_record(h, batch, result, [] if discard_records else None, horizon, can_discard,
                               retain_empty)

    def _mapped(self, h: RecordBatchHeader, horizon: int | None) -> bool:
        """A data batch wholly in the mapped section: the map alone says which records stay."""
        return (isinstance(self.keys, OffsetMap) and not h.is_control and horizon is None
                and self.task.first_dirty_offset <= h.base_offset and h.last_offset <= self.latest)

    def _by_count(self, h: RecordBatchHeader, batch: memoryview, result: CleanResult,
                  retain_empty: bool) -> tuple[bool, bytes | memoryview | None]:
        """No record decoded: a batch none of whose records is its key's latest goes, one all of
        whose records are (and no tombstone among them) stays as it is: (True, what stays). Any
        other batch is rewritten record by record: (False, None)."""
        assert isinstance(self.keys, OffsetMap)
        kept = self.keys.kept_in(h.base_offset, h.last_offset)
        if kept == 0:
            result.records_read += h.records_count
            return True, empty_batch(h) if retain_empty else None
        if kept == h.records_count and h.base_offset not in self.keys.tombstone_batches:
            result.records_read += kept
            result.records_kept += kept
            return True, batch
        return False, None

    def _by_record(self, h: RecordBatchHeader, batch: memoryview, result: CleanResult,
                   records: list[RawRecord] | None, horizon: int | None, can_discard: bool,
                   retain_empty: bool) -> bytes | memoryview | None:
        if records is None:
            records = decode_raw_records(batch, h) if h.records_count else []
        result.records_read += len(records)
        kept = records if h.is_control else [r for r in records if self._keep(r, horizon)]
        result.records_kept += len(kept)
        if not kept:
            return empty_batch(h) if retain_empty else None
        marks_empty_txn = can_discard and h.is_control
        needs_horizon = horizon is None and (marks_empty_txn or any(not r.has_value for r in kept))
        if len(kept) == len(records) and not needs_horizon:
            return batch
        new_horizon = self.task.now_ms + self.task.delete_retention_ms if needs_horizon else None
        return build_filtered_batch(batch, h, kept, new_horizon)

    def _keep(self, r: RawRecord, horizon: int | None) -> bool:
        if r.offset > self.latest:
            return True
        if r.key is None or r.offset < self.keys.get(r.key, -1):
            return False
        return r.has_value or horizon is None or self.task.now_ms < horizon


def group_segments(segments: Sequence[SegmentInfo], max_size: int) -> list[list[SegmentInfo]]:
    """Consecutive segments whose sizes add up to at most segment.bytes (Kafka's groupSegmentsBySize)."""
    groups: list[list[SegmentInfo]] = []
    for seg in segments:
        if groups and sum(s.size for s in groups[-1]) + seg.size <= max_size:
            groups[-1].append(seg)
        else:
            groups.append([seg])
    return groups


def _clean_group(group: list[SegmentInfo], task: CleanTask, directory: Path, filt: _Filter, io: _PassIO,
                 result: CleanResult) -> CleanedGroup:
    tmp = directory / CLEANER_TMP
    base = group[0].base_offset
    out = LogSegment.create(tmp, base, task.index_interval_bytes)
    aborted_before = len(filt.txns.kept_aborted)
    try:
        parts: list[bytes | memoryview] = []
        headers: list[tuple[int, RecordBatchHeader]] = []
        pending = 0
        for seg in group:
            result.bytes_read += seg.size
            for h, batch in _iter_file(directory / f"{base_name(seg.base_offset)}.log", seg.size, io):
                kept = filt.filter(h, batch, result)
                if kept is None:
                    continue
                headers.append((pending, h if kept is batch else RecordBatchHeader.parse(kept)))
                parts.append(kept)
                pending += len(kept)
                if pending >= io.chunk:
                    out.append(parts, headers, pending)
                    io.throttler.maybe_throttle(pending)
                    parts, headers, pending = [], [], 0
        if parts:
            out.append(parts, headers, pending)
            io.throttler.maybe_throttle(pending)
        out.flush()
        size = out.size
    finally:
        out.close()
    _write_txn_index(tmp, base, filt.txns.kept_aborted[aborted_before:])
    os.utime(tmp / f"{base_name(base)}.log", ns=(group[-1].mtime_ns, group[-1].mtime_ns))
    result.bytes_written += size
    return CleanedGroup(base_offset=base, replaces=tuple(s.base_offset for s in group), size=size)


def base_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def _write_txn_index(tmp: Path, base: int, entries: Sequence[AbortedTxn]) -> None:
    ix = TransactionIndexFile(tmp / f"{base_name(base)}.txnindex", base)
    ix.create()
    try:
        for entry in entries:
            ix.append(entry)
        ix.flush()
    finally:
        ix.close()


def watch_broker(broker_pid: int) -> None:
    """Worker process initializer: end this worker as soon as the broker is gone. A broker killed
    with -9 cannot stop its workers, and one blocked waiting for work would live on (holding the
    broker's stdout open, and later writing into a new broker's cleaner-tmp/)."""
    parent = os.getppid()
    # Cleaning can wait; produce and fetch cannot: the worker yields the CPU to the broker.
    os.nice(WORKER_NICENESS)

    def watch() -> None:
        while True:
            time.sleep(0.2)
            try:
                os.kill(broker_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="watch-broker", daemon=True).start()


def run_clean_pass(task: CleanTask) -> CleanResult:
    """Worker process: clean, leaving the new segments in cleaner-tmp/ (flushed)."""
    global _parent
    _parent = os.getppid()
    directory = Path(task.directory)
    tmp = directory / CLEANER_TMP
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    cpu = time.process_time()
    io = _PassIO.of(task)
    keys, latest = build_offset_map(task, directory, io)
    result = CleanResult(end_offset=latest + 1)
    filt = _Filter(task, keys, latest)
    todo = [s for s in task.segments if s.base_offset <= latest]
    try:
        for group in group_segments(todo, task.segment_bytes):
            result.groups.append(_clean_group(group, task, directory, filt, io, result))
        _fsync_dir(tmp)
        io.throttler.finish()
        result.throttled_s = io.throttler.slept
        result.cpu_s = time.process_time() - cpu
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
