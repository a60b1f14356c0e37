"""Record batch headers and CRCs against batches captured from confluent-kafka and kafka-python
(tests/protocol/vectors/, made by capture.py), plus corrupted variants and round trips."""

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from protocol.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    CompressionType,
    RecordBatchHeader,
    iter_batches,
    select_batches,
    set_base_offset,
    set_partition_leader_epoch,
    stamp_log_append_time,
)
from protocol.records import Record, build_batch, read_records

VECTORS = Path(__file__).parent / "vectors"
CODECS = {"none": CompressionType.NONE, "gzip": CompressionType.GZIP, "snappy": CompressionType.SNAPPY,
          "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}
CAPTURED = sorted(p.stem for p in VECTORS.glob("*.bin"))
CREATE_TIME = 1_700_000_000_000
CRC_FROM = 21  # attributes onwards; checked against the struct layout below


def vector(name: str) -> bytes:
    return (VECTORS / f"{name}.bin").read_bytes()


def test_every_client_and_codec_was_captured():
    assert CAPTURED == sorted(f"{c}-{codec}" for c in ("confluent", "kafka-python") for codec in CODECS)


def test_crc_range_starts_after_the_crc_field():
    assert LOG_OVERHEAD + 4 + 1 + 4 == CRC_FROM
    assert HEADER_SIZE == 61


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_batch_header(name):
    data = vector(name)
    [(pos, header)] = list(iter_batches(data))
    assert pos == 0 and header.size == len(data)
    assert header.magic == 2
    assert header.compression == CODECS[name.rsplit("-", 1)[1]]
    assert (header.records_count, header.last_offset_delta) == (5, 4)
    assert header.base_timestamp == header.max_timestamp == CREATE_TIME
    assert not (header.is_control or header.is_transactional or header.log_append_time)
    if name.startswith("kafka-python"):  # idempotent by default: a producer id and sequence 0
        assert header.has_producer_id and header.base_sequence == 0
    else:
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)


@pytest.mark.parametrize("name", CAPTURED)
def test_captured_batch_records(name):
    [(header, records)] = list(read_records(vector(name)))
    assert [r.offset for r in records] == [header.base_offset + i for i in range(5)]
    assert [r.key for r in records] == [b"k%d" % i for i in range(5)]
    assert [r.value for r in records] == [b"value-%d " % i * 12 for i in range(5)]
    assert [r.headers for r in records] == [(("h", b"x%d" % i),) for i in range(5)]
    assert {r.timestamp for r in records} == {CREATE_TIME}


@pytest.mark.parametrize("name", CAPTURED)
def test_any_flipped_bit_under_the_crc_is_caught(name):
    data = vector(name)
    for pos in range(CRC_FROM, len(data), max(1, len(data) // 40)):
        bad = bytearray(data)
        bad[pos] ^= 0x01
        with pytest.raises(KafkaError) as info:
            list(iter_batches(bad))
        assert info.value.code is ErrorCode.corrupt_message, pos


@pytest.mark.parametrize("name", ["confluent-zstd", "kafka-python-gzip"])
def test_a_wrong_stored_crc_is_caught(name):
    bad = bytearray(vector(name))
    bad[17] ^= 0x80
    with pytest.raises(CorruptRecordError, match="CRC32C"):
        list(iter_batches(bad))
    assert list(iter_batches(bad, verify_crc=False))  # the header itself still parses


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_other_magic_is_unsupported(magic):
    bad = bytearray(vector("confluent-none"))
    bad[16] = magic
    with pytest.raises(KafkaError) as info:
        list(iter_batches(bad))
    assert info.value.code is ErrorCode.unsupported_for_message_format


def test_patching_offset_and_leader_epoch_keeps_the_crc_valid():
    buf = bytearray(vector("kafka-python-snappy"))
    set_base_offset(buf, 0, 123_456_789)
    set_partition_leader_epoch(buf, 0, 7)
    [(_, header)] = list(iter_batches(buf))
    assert (header.base_offset, header.partition_leader_epoch, header.last_offset) == (123_456_789, 7, 123_456_793)


def test_stamp_log_append_time_sets_the_flag_and_recomputes_the_crc():
    original = vector("confluent-gzip")
    buf = stamp_log_append_time(original, CREATE_TIME + 99)
    [(_, patched)] = list(iter_batches(buf))  # iter_batches verifies the CRC
    assert patched.max_timestamp == CREATE_TIME + 99
    assert patched.log_append_time and not RecordBatchHeader.parse(original).log_append_time


@pytest.mark.parametrize("keep", [1, 16, 17, 30, HEADER_SIZE - 1, HEADER_SIZE, 100, -1])
def test_truncated_batch_is_corrupt(keep):
    with pytest.raises(CorruptRecordError):
        list(iter_batches(vector("confluent-none")[:keep]))


def test_batch_length_beyond_the_buffer_or_below_the_header_is_corrupt():
    for length in (10**6, HEADER_SIZE - LOG_OVERHEAD - 1, 0, -5):
        bad = bytearray(vector("confluent-none"))
        bad[8:12] = length.to_bytes(4, "big", signed=True)
        with pytest.raises(CorruptRecordError):
            list(iter_batches(bad))


def test_concatenated_batches_are_walked_in_order():
    data = b"".join(vector(n) for n in CAPTURED)
    found = list(iter_batches(data))
    assert len(found) == len(CAPTURED)
    assert sum(h.size for _, h in found) == len(data)
    with pytest.raises(CorruptRecordError):
        list(iter_batches(data + vector("confluent-gzip")[:40]))


records_st = st.lists(
    st.builds(
        Record,
        timestamp=st.integers(0, 2**41),
        key=st.none() | st.binary(max_size=40),
        value=st.none() | st.binary(max_size=200),
        headers=st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)),
                         max_size=3).map(tuple),
    ),
    min_size=1, max_size=30,
)


@given(
    records_st,
    st.integers(0, 2**62),
    st.integers(-1, 2**40),
    st.integers(-1, 2**15 - 1),
    st.integers(-1, 2**31 - 1),
    st.booleans(),
)
def test_build_then_read_round_trip(records, base_offset, producer_id, epoch, sequence, transactional):
    data = build_batch(records, base_offset=base_offset, producer_id=producer_id, producer_epoch=epoch,
                       base_sequence=sequence, transactional=transactional)
    [(header, got)] = list(read_records(bytes(data)))
    assert header.size == len(data)
    assert (header.base_offset, header.producer_id, header.producer_epoch, header.base_sequence) == (
        base_offset, producer_id, epoch, sequence)
    assert header.is_transactional is transactional
    assert header.records_count == len(records)
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert got == [
        Record(offset=base_offset + i, timestamp=r.timestamp, key=r.key, value=r.value, headers=r.headers)
        for i, r in enumerate(records)
    ]


@given(st.binary(max_size=400))
def test_arbitrary_bytes_parse_or_raise_a_kafka_error(data):
    try:
        for pos, header in iter_batches(data):
            assert pos + header.size <= len(data)
    except KafkaError as exc:
        assert exc.code in (ErrorCode.corrupt_message, ErrorCode.unsupported_for_message_format)


# -- select_batches: Fetch's choice of whole batches in one buffer ----------------------------------


def _log(sizes: list[int]) -> tuple[bytes, list[int]]:
    """One-record batches at offsets 0.. with values of the given sizes, and their positions."""
    data, positions = b"", []
    for offset, size in enumerate(sizes):
        positions.append(len(data))
        data += bytes(build_batch([Record(value=b"v" * size, timestamp=1)], base_offset=offset))
    return data, positions


def test_select_batches_starts_at_the_fetch_offset_and_stops_at_limit():
    data, at = _log([10] * 6)
    run = select_batches(data, 2, 1 << 20, 5)
    assert (run.start, run.end, run.next_offset, run.complete) == (at[2], at[5], 5, True)


def test_select_batches_keeps_within_max_bytes_but_takes_one_batch():
    data, at = _log([100, 100, 100])
    assert (select_batches(data, 0, at[2], 9).end, select_batches(data, 0, at[2], 9).complete) == (at[2], True)
    first = select_batches(data, 0, 1, 9)  # KIP-74: the first batch whatever max_bytes says
    assert (first.end, first.next_offset, first.first_size) == (at[1], 1, at[1])
    # Without min_one a first batch too large is known from its header alone: none, and done.
    none = select_batches(data[:40], 0, at[1] - 1, 9, min_one=False)
    assert (none.start, none.end, none.next_offset, none.complete) == (0, 0, 0, True)
    fits = select_batches(data, 1, 2 * at[1], 9, min_one=False)
    assert (fits.start, fits.end, fits.next_offset) == (at[1], len(data), 3)


def test_select_batches_says_when_the_buffer_ends_inside_the_choice():
    data, at = _log([100, 100, 100])
    cut = select_batches(data[: at[2] + 30], 0, 1 << 20, 9)
    assert (cut.start, cut.end, cut.complete, cut.resume) == (0, at[2], False, at[2])
    skipped = select_batches(data[: at[1] - 5], 2, 1 << 20, 9)  # a batch before the offset, cut
    assert (skipped.start, skipped.complete, skipped.resume) == (-1, False, at[1])
    whole = select_batches(data, 0, 1 << 20, 9)  # the buffer's end is not the log's: not complete
    assert (whole.end, whole.complete) == (len(data), False)


def test_select_batches_refuses_a_length_that_would_not_move_on():
    data, _ = _log([10])
    with pytest.raises(CorruptRecordError):
        select_batches(data[:8] + struct.pack(">i", 0) + data[12:], 0, 1 << 20, 9)


@given(st.binary(max_size=400), st.integers(0, 5), st.integers(1, 500))
def test_select_batches_over_arbitrary_bytes_ends_or_raises(data, fetch_offset, max_bytes):
    try:
        run = select_batches(data, fetch_offset, max_bytes, 1 << 62)
    except CorruptRecordError:
        return
    assert 0 <= run.end <= len(data) and (run.end == 0 or 0 <= run.start < run.end)
