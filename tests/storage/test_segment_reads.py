"""read_batches: Fetch's one read per segment chooses exactly the batches a walk of every header
would (the reference below), whatever the batch sizes, index interval, max_bytes, limit and
min_one (KIP-74: the first batch taken whatever its size, or only if it fits)."""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.record_batch import RecordBatchHeader, iter_batches
from protocol.records import Record, build_batch
from storage.log_segment import LogSegment
from storage.segment_reads import read_batches


def _segments(directory: Path, layout: list[list[tuple[int, int]]], interval: int) -> list[LogSegment]:
    """Segments of batches laid out as [[(records, value bytes), ...], ...], offsets consecutive."""
    segments, offset = [], 0
    for batches in layout:
        seg = LogSegment(directory, offset, interval)
        for count, size in batches:
            data = bytes(build_batch([Record(value=b"v" * size, timestamp=1000) for _ in range(count)],
                                     base_offset=offset))
            seg.append([data], [(0, RecordBatchHeader.parse(data))])
            offset += count
        segments.append(seg)
    return segments


def _reference(segments: list[LogSegment], fetch_offset: int, max_bytes: int, limit: int,
               min_one: bool = True) -> tuple[bytes, int]:
    """The same choice, walking every batch header of every segment."""
    if fetch_offset >= limit:
        return b"", fetch_offset
    for seg in segments:
        if seg.next_offset <= fetch_offset:
            continue
        data = seg.read_range(0, seg.size)
        chosen: list[tuple[int, RecordBatchHeader]] = []
        for pos, h in iter_batches(data, verify_crc=False):
            if h.last_offset < fetch_offset:
                continue
            if h.base_offset >= limit:
                break
            if (chosen or not min_one) and pos + h.size - (chosen[0][0] if chosen else pos) > max_bytes:
                if not chosen:
                    return b"", fetch_offset  # the first batch does not fit: nothing
                break
            chosen.append((pos, h))
        if chosen:
            start, end = chosen[0][0], chosen[-1][0] + chosen[-1][1].size
            return data[start:end], chosen[-1][1].last_offset + 1
    return b"", fetch_offset


layouts = st.lists(st.lists(st.tuples(st.integers(1, 5), st.sampled_from([0, 10, 300, 2_000, 9_000])),
                            min_size=1, max_size=12), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layouts, interval=st.sampled_from([1, 100, 4096, 1 << 20]), data=st.data())
def test_read_batches_matches_a_walk_of_every_header(layout, interval, data) -> None:
    end = sum(count for batches in layout for count, _ in batches)
    with tempfile.TemporaryDirectory() as d:
        segments = _segments(Path(d), layout, interval)
        try:
            for _ in range(8):
                fetch_offset = data.draw(st.integers(0, end))
                max_bytes = data.draw(st.sampled_from([1, 100, 3_000, 10_000, 40_000, 1 << 20]))
                limit = data.draw(st.integers(0, end))
                min_one = data.draw(st.booleans())
                got, next_offset = read_batches(segments, fetch_offset, max_bytes, limit, min_one)
                assert (bytes(got), next_offset) == _reference(segments, fetch_offset, max_bytes, limit, min_one)
        finally:
            for seg in segments:
                seg.close()


def test_one_read_returns_a_view_of_it(tmp_path) -> None:
    """The bytes returned are a view of the one pread, not a second read or a copy of it."""
    (seg,) = _segments(tmp_path, [[(1, 1000)] * 20], 4096)
    reads: list[int] = []
    read_range = seg.read_range
    seg.read_range = lambda start, end: reads.append(end - start) or read_range(start, end)  # type: ignore[method-assign]
    got, next_offset = read_batches([seg], 5, 10_000, 20)
    assert isinstance(got, memoryview) and len(reads) == 1
    assert next_offset == 5 + len(got) // (seg.size // 20)
    early, next_offset = read_batches([seg], 5, 10_000, 6)  # stopped by the limit: a copy, not a view
    assert isinstance(early, bytes) and next_offset == 6 and len(early) == seg.size // 20
    seg.close()
