import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker,
    parse_control_type,
    read_end_txn_marker,
)
from protocol.errors import CorruptRecordError
from protocol.record_batch import iter_batches, set_base_offset
from protocol.records import Record, build_batch, read_records


def _marker(control_type=ControlRecordType.COMMIT, coordinator_epoch=3, **kw):
    args = dict(producer_id=42, producer_epoch=7, timestamp=1_700_000_000_000)
    args.update(kw)
    return build_end_txn_marker(
        control_type=control_type, coordinator_epoch=coordinator_epoch, **args
    )


def test_marker_batch_has_kafka_header_fields():
    batch = _marker()
    [(pos, header)] = list(iter_batches(batch))  # also verifies the CRC32C
    assert pos == 0
    assert header.attributes == 0x30
    assert header.is_control and header.is_transactional
    assert header.compression == 0
    assert header.producer_id == 42 and header.producer_epoch == 7
    assert header.base_sequence == -1
    assert header.last_offset_delta == 0 and header.records_count == 1


def test_marker_record_key_and_value_bytes():
    [(_header, [record])] = list(read_records(_marker(ControlRecordType.ABORT, 9)))
    assert record.key == b"\x00\x00\x00\x00"
    assert record.value == b"\x00\x00" + struct.pack(">i", 9)
    assert record.offset == 0 and record.headers == ()


@given(
    control_type=st.sampled_from(ControlRecordType),
    coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    offset=st.integers(0, 2**62),
)
def test_marker_round_trip(control_type, coordinator_epoch, producer_id, producer_epoch, offset):
    batch = _marker(
        control_type, coordinator_epoch, producer_id=producer_id, producer_epoch=producer_epoch
    )
    set_base_offset(batch, 0, offset)  # outside the CRC, as the log does on append
    [(_pos, header)] = list(iter_batches(batch))
    assert header.base_offset == offset
    marker = read_end_txn_marker(batch)
    assert marker == EndTransactionMarker(
        control_type=control_type, coordinator_epoch=coordinator_epoch
    )
    assert marker.is_commit == (control_type is ControlRecordType.COMMIT)


def test_marker_read_at_position_inside_a_larger_buffer():
    data = build_batch([Record(value=b"x")]) + _marker(ControlRecordType.ABORT, 1)
    [(_, _), (pos, header)] = list(iter_batches(data))
    marker = read_end_txn_marker(data, pos, header)
    assert marker.control_type is ControlRecordType.ABORT


def test_unknown_control_type_is_ignored():
    batch = build_batch(
        [Record(key=struct.pack(">hh", 0, 5), value=b"\x00\x00")], control=True
    )
    assert read_end_txn_marker(batch) is None
    assert parse_control_type(struct.pack(">hh", 0, 5)) == 5


def test_newer_versions_are_read_by_known_fields():
    batch = build_batch(
        [Record(key=struct.pack(">hh", 1, 1) + b"extra", value=struct.pack(">hi", 1, 4) + b"x")],
        control=True,
    )
    assert read_end_txn_marker(batch) == EndTransactionMarker(
        control_type=ControlRecordType.COMMIT, coordinator_epoch=4
    )


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", struct.pack(">hh", -1, 0)])
def test_bad_control_keys_are_corrupt(key):
    with pytest.raises(CorruptRecordError):
        parse_control_type(key)


def test_short_marker_value_is_corrupt():
    batch = build_batch([Record(key=struct.pack(">hh", 0, 0), value=b"\x00")], control=True)
    with pytest.raises(CorruptRecordError, match="short value"):
        read_end_txn_marker(batch)


def test_data_batch_is_not_a_marker():
    with pytest.raises(ValueError, match="not a control batch"):
        read_end_txn_marker(build_batch([Record(value=b"x")]))


def test_control_batch_with_two_records_is_corrupt():
    key = struct.pack(">hh", 0, 1)
    batch = build_batch([Record(key=key, value=b"\x00" * 6)] * 2, control=True)
    with pytest.raises(CorruptRecordError, match="one uncompressed record"):
        read_end_txn_marker(batch)


@given(st.binary(max_size=12))
def test_garbage_record_body_is_corrupt_not_index_error(body):
    batch = bytearray(_marker())
    head = batch[:61]
    data = head + body
    struct.pack_into(">i", data, 8, len(data) - 12)
    try:
        read_end_txn_marker(data)
    except CorruptRecordError:
        pass
