import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError
from storage.producer_snapshot import (
    decode_snapshot,
    delete_snapshots_after,
    delete_snapshots_before,
    encode_snapshot,
    list_snapshot_offsets,
    load_latest_snapshot,
    snapshot_path,
    write_snapshot,
)
from storage.producer_state import ProducerStateManager
from tests.storage.helpers import header, marker


def _state_with_history() -> ProducerStateManager:
    s = ProducerStateManager("t-0")
    off = 0
    for i in range(7):
        s.update(header(pid=1, epoch=2, seq=i * 2, count=2, offset=off, ts=100 + i))
        off += 2
    s.update(header(pid=2, epoch=0, seq=0, offset=off, txn=True))
    off += 1
    s.update(header(pid=3, epoch=1, seq=0, offset=off, txn=True))
    s.update(header(pid=3, epoch=1, offset=off + 1, control=True), marker(False, 4))
    return s


def _as_tuple(entries):
    return sorted(
        (e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
         e.current_txn_first_offset, tuple(e.batch_metadata))
        for e in entries
    )


def test_snapshot_round_trip_keeps_all_retained_batches():
    s = _state_with_history()
    entries = decode_snapshot(encode_snapshot(s.producers.values()))
    assert _as_tuple(entries) == _as_tuple(s.producers.values())
    assert len(next(e for e in entries if e.producer_id == 1).batch_metadata) == 5


def test_restored_state_deduplicates_and_holds_the_lso():
    s = _state_with_history()
    r = ProducerStateManager("t-0")
    r.restore(decode_snapshot(encode_snapshot(s.producers.values())), s.map_end_offset)
    dup = r.check_append(header(pid=1, epoch=2, seq=10, count=2))
    assert dup is not None and dup.first_offset == 10
    assert r.first_unstable_offset() == 14
    assert r.map_end_offset == s.map_end_offset == 17


@given(st.integers(0, 200))
def test_any_corruption_is_detected(position):
    data = bytearray(encode_snapshot(_state_with_history().producers.values()))
    position %= len(data)
    data[position] ^= 0x40
    with pytest.raises(CorruptRecordError):
        decode_snapshot(bytes(data))


@given(st.binary(max_size=80))
def test_garbage_is_corrupt_not_struct_error(data):
    try:
        decode_snapshot(data)
    except CorruptRecordError:
        pass


def test_truncated_snapshot_is_corrupt():
    data = encode_snapshot(_state_with_history().producers.values())
    with pytest.raises(CorruptRecordError):
        decode_snapshot(data[:-3])


def test_unknown_version_is_corrupt():
    data = bytearray(encode_snapshot([]))
    struct.pack_into(">h", data, 0, 9)
    with pytest.raises(CorruptRecordError, match="version 9"):
        decode_snapshot(bytes(data))


def test_files_are_named_by_offset_and_the_newest_usable_one_is_loaded(tmp_path):
    s = _state_with_history()
    path = write_snapshot(tmp_path, s)
    assert path.name == "00000000000000000017.snapshot"
    s.update(header(pid=4, seq=0, offset=17))
    write_snapshot(tmp_path, s)
    assert list_snapshot_offsets(tmp_path) == [17, 18]

    r = ProducerStateManager("t-0")
    assert load_latest_snapshot(tmp_path, r, upto_offset=17) == 17
    assert 4 not in r.producers
    assert load_latest_snapshot(tmp_path, r, upto_offset=100) == 18
    assert 4 in r.producers


def test_corrupt_newest_snapshot_falls_back_to_the_older_one(tmp_path):
    s = _state_with_history()
    write_snapshot(tmp_path, s)
    snapshot_path(tmp_path, 30).write_bytes(b"\x00\x01garbage")
    r = ProducerStateManager("t-0")
    assert load_latest_snapshot(tmp_path, r, upto_offset=40) == 17
    assert list_snapshot_offsets(tmp_path) == [17]


def test_no_snapshot_means_empty_state_from_zero(tmp_path):
    r = ProducerStateManager("t-0")
    r.update(header(offset=5))
    assert load_latest_snapshot(tmp_path, r, upto_offset=10) is None
    assert r.producers == {} and r.map_end_offset == 0


def test_delete_after_and_before(tmp_path):
    for o in (0, 10, 20, 30):
        snapshot_path(tmp_path, o).write_bytes(b"")
    delete_snapshots_after(tmp_path, 20)
    assert list_snapshot_offsets(tmp_path) == [0, 10, 20]
    delete_snapshots_before(tmp_path, 10)
    assert list_snapshot_offsets(tmp_path) == [10, 20]
