"""Segment recovery (torn and corrupt tails), index rebuild, and index lookups."""

import logging
import os
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.record_batch import iter_batches, set_base_offset
from protocol.records import Record, build_batch
from storage.log_segment import LogSegment, segment_name
from storage.offset_index import OffsetIndex, TimeIndex
from tests.storage.test_partition_log import batch, crash, open_log, values


def batches_at(base: int, count: int, size: int = 30, ts: int = 1000) -> list[bytes]:
    """count one-record batches with offsets base.. as stored, so they can be written to a file."""
    out = []
    for i in range(count):
        b = build_batch([Record(value=b"x" * size, timestamp=ts + 10 * i)], base_offset=base + i)
        out.append(bytes(b))
    return out


def write_segment(directory: Path, data: bytes, base: int = 0) -> Path:
    path = directory / segment_name(base, ".log")
    path.write_bytes(data)
    return path


def recovered(directory: Path, base: int = 0, interval: int = 1) -> LogSegment:
    seg = LogSegment(directory, base, interval)
    seg.load(recover=True)
    return seg


# -- recovery through the partition log ---------------------------------------------------------


async def filled(tmp_path, n=5, **config):
    plog = open_log(tmp_path, **config)
    for i in range(n):
        await plog.append(batch(2, tag=b"b%d-" % i))
    sizes = [h.size for seg in plog.segments for _, h in iter_batches(seg.read_range(0, seg.size))]
    crash(plog)
    return sizes


@pytest.mark.parametrize("cut", [1, 10, 60, 61, 62])
async def test_torn_tail_is_truncated_and_the_prefix_survives(tmp_path, caplog, cut):
    sizes = await filled(tmp_path)
    log_file = tmp_path / segment_name(0, ".log")
    os.truncate(log_file, sum(sizes) - cut)
    with caplog.at_level(logging.WARNING):
        plog = open_log(tmp_path, clean=False)
    assert plog.log_end_offset == 8
    assert log_file.stat().st_size == sum(sizes[:4])
    assert "truncated" in caplog.text
    assert [v for _, v in await values(plog)] == [b"b%d-%d" % (i, j) for i in range(4) for j in range(2)]
    info = await plog.append(batch(1))
    assert info.base_offset == 8
    await plog.close()


@pytest.mark.parametrize("where", ["crc", "attributes", "body", "length"])
async def test_corrupt_last_batch_is_cut(tmp_path, where):
    sizes = await filled(tmp_path)
    log_file = tmp_path / segment_name(0, ".log")
    data = bytearray(log_file.read_bytes())
    last = sum(sizes[:4])
    at = {"crc": last + 17, "attributes": last + 22, "body": len(data) - 3, "length": last + 9}[where]
    data[at] ^= 0x40
    log_file.write_bytes(bytes(data))
    plog = open_log(tmp_path, clean=False)
    assert plog.log_end_offset == 8 and log_file.stat().st_size == last
    await plog.close()


async def test_garbage_after_the_last_batch_is_cut(tmp_path):
    sizes = await filled(tmp_path)
    log_file = tmp_path / segment_name(0, ".log")
    with open(log_file, "ab") as f:
        f.write(os.urandom(500))
    plog = open_log(tmp_path, clean=False)
    assert plog.log_end_offset == 10 and log_file.stat().st_size == sum(sizes)
    await plog.close()


async def test_only_the_newest_segment_is_scanned_and_cut(tmp_path):
    one = len(batch(2, tag=b"b0-"))
    await filled(tmp_path, n=6, segment_bytes=2 * one)
    newest = tmp_path / segment_name(8, ".log")
    os.truncate(newest, one + 5)
    plog = open_log(tmp_path, clean=False)
    assert [s.base_offset for s in plog.segments] == [0, 4, 8]
    assert plog.log_end_offset == 10
    assert len(await values(plog)) == 10
    await plog.close()


async def test_a_wholly_torn_newest_segment_leaves_an_empty_segment(tmp_path):
    one = len(batch(2, tag=b"b0-"))
    await filled(tmp_path, n=5, segment_bytes=2 * one)
    os.truncate(tmp_path / segment_name(8, ".log"), 7)
    plog = open_log(tmp_path, clean=False)
    assert plog.log_end_offset == 8
    assert (await plog.append(batch(1))).base_offset == 8
    await plog.close()


# -- index rebuild -------------------------------------------------------------------------------


async def segmented(tmp_path):
    """Three segments of four batches (timestamps 1000 + 10*offset), closed cleanly."""
    plog = open_log(tmp_path, segment_bytes=4 * len(batches_at(0, 1)[0]), index_interval_bytes=1)
    for i in range(12):
        await plog.append(bytes(build_batch([Record(value=b"x" * 30, timestamp=1000 + 10 * i)])))
    assert [s.base_offset for s in plog.segments] == [0, 4, 8]
    await plog.close()


async def check_lookups(tmp_path, clean):
    plog = open_log(tmp_path, clean=clean, index_interval_bytes=1)
    assert plog.log_end_offset == 12
    assert await plog.offset_for_timestamp(1055) == (6, 1060)
    assert await plog.offset_for_timestamp(1000) == (0, 1000)
    assert await plog.offset_for_max_timestamp() == (11, 1110)
    for offset in (1, 5, 9):
        info = await plog.read(offset, 1)
        [(_, header)] = list(iter_batches(info.records[0]))
        assert header.base_offset == offset
    await plog.close()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("base", [0, 4, 8])
async def test_missing_index_is_rebuilt(tmp_path, suffix, base):
    await segmented(tmp_path)
    (tmp_path / segment_name(base, suffix)).unlink()
    await check_lookups(tmp_path, clean=True)
    assert (tmp_path / segment_name(base, suffix)).stat().st_size > 0


@pytest.mark.parametrize("garbage", [b"\x01\x02\x03", b"\xff" * 16, struct.pack(">ii", 0, 10**9)])
@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
async def test_corrupt_index_is_rebuilt(tmp_path, suffix, garbage):
    await segmented(tmp_path)
    path = tmp_path / segment_name(4, suffix)
    path.write_bytes(garbage)
    await check_lookups(tmp_path, clean=True)


async def test_an_empty_offset_index_of_a_non_empty_segment_is_rebuilt(tmp_path):
    await segmented(tmp_path)
    for suffix in (".index", ".timeindex"):
        (tmp_path / segment_name(4, suffix)).write_bytes(b"")
    await check_lookups(tmp_path, clean=True)
    assert (tmp_path / segment_name(4, ".timeindex")).stat().st_size > 0


async def test_indexes_are_rebuilt_on_unclean_open(tmp_path):
    await segmented(tmp_path)
    (tmp_path / segment_name(8, ".index")).write_bytes(b"")
    await check_lookups(tmp_path, clean=False)


# -- segment recovery on arbitrary bytes -----------------------------------------------------------


def assert_clean_prefix(seg: LogSegment, original: bytes) -> None:
    kept = seg.read_range(0, seg.size)
    assert kept == original[: seg.size]
    assert sum(h.size for _, h in iter_batches(kept)) == seg.size  # every kept byte is a valid batch
    assert os.path.getsize(seg.log_path) == seg.size


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 4), st.binary(max_size=300), st.integers(0, 400))
def test_recovery_of_random_tails_ends_in_a_clean_truncation(good, garbage, cut):
    with tempfile.TemporaryDirectory() as tmp:
        prefix = b"".join(batches_at(0, good))
        data = prefix + garbage if cut >= len(prefix) else prefix[:cut]  # garbage, or a torn batch
        write_segment(Path(tmp), data)
        seg = recovered(Path(tmp))
        try:
            assert_clean_prefix(seg, data)
            if data.startswith(prefix):
                assert seg.size >= len(prefix)
            assert seg.next_offset == sum(1 for _ in iter_batches(seg.read_range(0, seg.size)))
        finally:
            seg.close()


@settings(max_examples=100)
@given(st.binary(min_size=1, max_size=2000))
def test_recovery_of_pure_garbage_never_raises(garbage):
    with tempfile.TemporaryDirectory() as tmp:
        write_segment(Path(tmp), garbage)
        seg = recovered(Path(tmp))
        try:
            assert_clean_prefix(seg, garbage)
        finally:
            seg.close()


@pytest.mark.parametrize("length", [-100, -1, 0, 5, 2**31 - 1])
def test_recovery_of_a_bad_header_followed_by_more_than_a_scan_chunk(tmp_path, length):
    good = b"".join(batches_at(0, 3))
    bad = bytearray(batches_at(3, 1)[0])
    struct.pack_into(">i", bad, 8, length)
    data = good + bytes(bad) + b"\x00" * (1 << 20)
    write_segment(tmp_path, data)
    seg = recovered(tmp_path)
    assert seg.size == len(good) and seg.next_offset == 3
    seg.close()


def test_recovery_reads_batches_larger_than_the_scan_chunk(tmp_path):
    big = bytes(build_batch([Record(value=os.urandom(3 << 20), timestamp=5)]))
    small = bytes(build_batch([Record(value=b"s", timestamp=6)], base_offset=1))
    data = big + small + b"torn"
    write_segment(tmp_path, data)
    seg = recovered(tmp_path)
    assert seg.size == len(big) + len(small) and seg.next_offset == 2
    seg.close()


# -- the indexes themselves -----------------------------------------------------------------------


def test_offset_index_lookup_is_the_floor_entry(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", 100)
    for offset, position in [(100, 0), (110, 500), (125, 900)]:
        index.append(offset, position)
    index.append(120, 1000)  # not beyond the last entry: ignored
    assert [index.lookup(o) for o in (0, 100, 109, 110, 124, 125, 10**9)] == [0, 0, 0, 500, 500, 900, 900]
    index.truncate_to_position(900)
    assert index.lookup(130) == 500
    index.close()
    reopened = OffsetIndex(tmp_path / "x.index", 100)
    assert reopened.load(log_size=901) and reopened.lookup(130) == 500
    reopened.close()


def test_offset_index_load_refuses_entries_past_the_log(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", 0)
    index.append(0, 0)
    index.append(5, 800)
    index.close()
    again = OffsetIndex(tmp_path / "x.index", 0)
    assert not again.load(log_size=800)
    again.close()


def test_time_index_lookup_and_truncate(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", 50)
    for ts, offset in [(1000, 50), (900, 55), (2000, 60), (3000, 70)]:
        index.maybe_append(ts, offset)  # 900 is not a new maximum: skipped
    assert index.max_timestamp == 3000
    assert [index.lookup(t) for t in (0, 1000, 1001, 2000, 2500, 9999)] == [50, 50, 50, 50, 60, 70]
    index.truncate_to_offset(60)
    assert index.max_timestamp == 1000
    index.close()
    again = TimeIndex(tmp_path / "x.timeindex", 50)
    assert again.load() and again.max_timestamp == 1000
    again.close()


def test_segment_find_and_truncate_to(tmp_path):
    data = b"".join(batches_at(10, 6))
    write_segment(tmp_path, data, base=10)
    seg = recovered(tmp_path, base=10)
    assert seg.find(13).header.base_offset == 13
    assert seg.find(99) is None
    seg.truncate_to(13)
    assert seg.next_offset == 13 and seg.size == len(b"".join(batches_at(10, 3)))
    assert seg.find(13) is None
    seg.close()


def test_segment_append_indexes_every_interval(tmp_path):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=200)
    for b in batches_at(0, 10, size=60):
        buf = bytearray(b)
        [(_, header)] = list(iter_batches(buf))
        set_base_offset(buf, 0, header.base_offset)
        seg.append([bytes(buf)], [(0, header)])
    entries = os.path.getsize(seg.index.path) // 8
    assert 1 < entries < 10
    assert seg.next_offset == 10
    seg.close()


def test_corrupt_tail_of_a_segment_with_sound_indexes_is_recovered_not_fatal(tmp_path):
    """A segment loaded without recovery (an older one, or after a clean shutdown) whose bytes
    past the last index entry are corrupt is recovered instead of failing the start-up."""
    from protocol.records import Record, build_batch
    from storage.log_segment import LogSegment

    seg = LogSegment(tmp_path, 0, index_interval_bytes=1 << 20)
    batches = [build_batch([Record(value=b"v" * 50, timestamp=1000 + i)], base_offset=i) for i in range(5)]
    from protocol.record_batch import iter_batches

    for b in batches:
        seg.append([bytes(b)], list(iter_batches(bytes(b))))
    good = sum(len(b) for b in batches[:3])
    seg.close()
    with open(tmp_path / "00000000000000000000.log", "r+b") as f:
        f.seek(good + 20)
        f.write(b"\xff" * 8)  # inside the 4th batch: its CRC no longer matches... and the magic is gone
        f.seek(good + 16)
        f.write(b"\x07")
    reopened = LogSegment(tmp_path, 0, index_interval_bytes=1 << 20)
    reopened.load(recover=False)
    assert reopened.size == good
    assert reopened.next_offset == 3
    reopened.close()
