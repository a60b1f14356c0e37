"""Read-side queries over a partition's segments: whole batches from an offset, and offset
lookups by timestamp. Synchronous; the partition log's owner task calls them."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from protocol.records import read_records

from .log_segment import BatchLocation, LogSegment

__all__ = ("read_batches", "offset_for_timestamp", "max_timestamp_offset", "segment_index")


def segment_index(segments: Sequence[LogSegment], offset: int) -> int:
    """Index of the segment that would hold offset (the first one for offsets before the log)."""
    return max(bisect.bisect_right([s.base_offset for s in segments], offset) - 1, 0)


def read_batches(
    segments: Sequence[LogSegment], fetch_offset: int, max_bytes: int, limit: int
) -> tuple[bytes, int]:
    """Whole batches from the one holding fetch_offset, all below limit, within max_bytes but at
    least one batch (KIP-74). Returns the bytes and one past the last offset returned."""
    if fetch_offset >= limit:
        return b"", fetch_offset
    for seg in segments[segment_index(segments, fetch_offset) :]:
        start = end = None
        next_offset = fetch_offset
        for loc in seg.iter_from(seg.index.lookup(fetch_offset)):
            h = loc.header
            if h.last_offset < fetch_offset:
                continue
            if h.base_offset >= limit:
                break
            if start is None:
                start = loc.position
            elif loc.position + h.size - start > max_bytes:
                break
            end = loc.position + h.size
            next_offset = h.last_offset + 1
        if start is not None and end is not None:
            return seg.read_range(start, end), next_offset
    return b"", fetch_offset


def offset_for_timestamp(
    segments: Sequence[LogSegment], timestamp: int, log_start_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record whose timestamp is >= timestamp."""
    for seg in segments:
        if seg.max_timestamp < timestamp:
            continue
        start = seg.index.lookup(seg.time_index.lookup(timestamp))
        for loc in seg.iter_from(start):
            if loc.header.max_timestamp >= timestamp:
                offset, ts = _first_record_at(seg, loc, timestamp)
                return max(offset, log_start_offset), ts
    return None


def max_timestamp_offset(segments: Sequence[LogSegment]) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with the largest timestamp (ListOffsets -3)."""
    best: tuple[int, int] | None = None
    for seg in segments:
        if seg.max_timestamp < 0 or (best and seg.max_timestamp <= best[1]):
            continue
        for loc in seg.iter_from(seg.index.lookup(seg.time_index.lookup(seg.max_timestamp))):
            if loc.header.max_timestamp == seg.max_timestamp:
                best = _first_record_at(seg, loc, seg.max_timestamp)
                break
    return best


def _first_record_at(seg: LogSegment, loc: BatchLocation, timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) of the batch's first record at or after timestamp. Kafka answers
    ListOffsets by time per record, so this one batch is decoded: ListOffsets is rare, and the
    produce and fetch paths still never decode records."""
    header = loc.header
    if header.log_append_time:  # every record carries the batch's append time
        return header.base_offset, header.max_timestamp
    for _, records in read_records(seg.read_range(loc.position, loc.position + header.size)):
        for record in records:
            if record.timestamp >= timestamp:
                return record.offset, record.timestamp
    return header.base_offset, header.max_timestamp
