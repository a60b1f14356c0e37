"""Read-side queries over a partition's segments: whole batches from an offset, and offset
lookups by timestamp. Synchronous; the partition log's owner task calls them."""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Sequence
from functools import partial

from protocol.record_batch import HEADER_SIZE, RecordBatchHeader, select_batches
from protocol.records import read_records

from .log_segment import BatchLocation, LogSegment

__all__ = ("first_record", "read_batches", "offset_for_timestamp", "max_timestamp_offset", "segment_index")


def segment_index(segments: Sequence[LogSegment], offset: int) -> int:
    """Index of the segment that would hold offset (the first one for offsets before the log)."""
    return max(bisect.bisect_right([s.base_offset for s in segments], offset) - 1, 0)


def read_batches(
    segments: Sequence[LogSegment], fetch_offset: int, max_bytes: int, limit: int, min_one: bool = True
) -> tuple[bytes | memoryview, int]:
    """Whole batches from the one holding fetch_offset, all below limit, within max_bytes but, when
    min_one, at least one batch (KIP-74). Returns the bytes and one past the last offset returned."""
    if fetch_offset >= limit:
        return b"", fetch_offset
    for seg in segments[segment_index(segments, fetch_offset) :]:
        found = _read_segment(seg, fetch_offset, max_bytes, limit, min_one)
        if found is not None:
            return found
    return b"", fetch_offset


def _read_segment(
    seg: LogSegment, fetch_offset: int, max_bytes: int, limit: int, min_one: bool
) -> tuple[bytes | memoryview, int] | None:
    """One pread from the index entry at or before fetch_offset, sized for max_bytes plus the
    index interval (the most that lies between that entry and fetch_offset's batch); the headers
    are walked in that buffer and a view of it returned, so the bytes sent are read once. Whole
    batches, unlike Kafka's FileRecords.slice which may end inside one: the group and transaction
    loaders and the aborted-transaction bound need whole batches, and every client takes either."""
    pos = seg.index.lookup(fetch_offset)
    want = max(max_bytes, HEADER_SIZE) + seg.index_interval_bytes
    while pos < seg.size:
        buf = seg.read_range(pos, min(pos + want, seg.size))
        run = select_batches(buf, fetch_offset, max_bytes, limit, min_one)
        if run.complete or pos + len(buf) >= seg.size:
            if run.end:
                return _kept(buf, run.start, run.end), run.next_offset
            # The first batch found does not fit (min_one off): nothing, not a later segment's.
            return (b"", fetch_offset) if run.complete and run.start >= 0 else None
        if run.start < 0:  # fetch_offset's batch lies further on: walk on from where this one stopped
            pos += run.resume
        else:  # the choice runs past the buffer (a batch longer than the slack): read it from its start
            pos += run.start
            want = max(max_bytes, run.first_size)
    return None


def _kept(buf: bytes, start: int, end: int) -> bytes | memoryview:
    """The chosen bytes as a view of the read, unless most of the read lies outside them (a
    read_committed read stopped early by the LSO): a view keeps its whole buffer alive until the
    response is sent, and a fetch of a thousand such partitions would hold a MiB for each."""
    view = memoryview(buf)[start:end]
    return view if 2 * len(view) >= len(buf) else bytes(view)


def offset_for_timestamp(
    segments: Sequence[LogSegment], timestamp: int, log_start_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after the log start whose timestamp is >=
    timestamp (Kafka's searchForTimestamp: batches are found by their max timestamp, then their
    records searched)."""
    for seg in segments:
        if seg.max_timestamp < timestamp:
            continue
        start = seg.index.lookup(max(seg.time_index.lookup(timestamp), log_start_offset))
        for loc in seg.iter_from(start):
            if loc.header.max_timestamp >= timestamp and loc.header.last_offset >= log_start_offset:
                found = _first_record(seg, loc, log_start_offset, partial(operator.le, timestamp))
                if found is not None:
                    return found
    return None


def max_timestamp_offset(segments: Sequence[LogSegment]) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with the largest timestamp (ListOffsets -3)."""
    best: tuple[int, int] | None = None
    for seg in segments:
        if seg.max_timestamp < 0 or (best and seg.max_timestamp <= best[1]):
            continue
        for loc in seg.iter_from(seg.index.lookup(seg.time_index.lookup(seg.max_timestamp))):
            if loc.header.max_timestamp == seg.max_timestamp:
                best = _first_record(seg, loc, 0, partial(operator.eq, seg.max_timestamp))
                break
    return best


def _first_record(
    seg: LogSegment, loc: BatchLocation, min_offset: int, match: Callable[[int], bool]
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of the batch at loc, at or after min_offset, whose
    timestamp matches. Decoding (and decompressing) one batch is what Kafka does here too."""
    return first_record(seg.read_range(loc.position, loc.position + loc.header.size), loc.header,
                        min_offset, match)


def first_record(
    data: bytes | memoryview, h: RecordBatchHeader, min_offset: int, match: Callable[[int], bool]
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of the batch data (header h) at or after
    min_offset whose timestamp matches (any backend's stored batch)."""
    for _, records in read_records(data):
        for rec in records:
            # LogAppendTime batches stamp every record with the batch's max timestamp.
            ts = h.max_timestamp if h.log_append_time else rec.timestamp
            if rec.offset >= min_offset and match(ts):
                return rec.offset, ts
    return None
