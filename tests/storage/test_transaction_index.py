import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError
from storage.api import AbortedTxn
from storage.transaction_index import (
    ENTRY_SIZE,
    TransactionIndex,
    TransactionIndexFile,
    collect_aborted,
    decode_entries,
    encode_entry,
)


def txn(pid, first, last, lso):
    return AbortedTxn(producer_id=pid, first_offset=first, last_offset=last, last_stable_offset=lso)


def test_entry_is_34_bytes_in_kafka_layout():
    data = encode_entry(txn(7, 10, 20, 21))
    assert ENTRY_SIZE == 34 and len(data) == 34
    assert data == (
        b"\x00\x00" + (7).to_bytes(8, "big") + (10).to_bytes(8, "big")
        + (20).to_bytes(8, "big") + (21).to_bytes(8, "big")
    )


@given(
    st.lists(
        st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**62), st.integers(0, 2**62),
                  st.integers(0, 2**62)),
        max_size=10,
    )
)
def test_entries_round_trip(rows):
    entries = [txn(*r) for r in rows]
    data = b"".join(encode_entry(e) for e in entries)
    assert decode_entries(data) == (entries, len(data))


def test_torn_tail_is_left_out():
    data = encode_entry(txn(1, 0, 1, 2)) + encode_entry(txn(2, 3, 4, 5))[:20]
    assert decode_entries(data) == ([txn(1, 0, 1, 2)], 34)


def test_unknown_entry_version_is_corrupt():
    with pytest.raises(CorruptRecordError):
        decode_entries(b"\x00\x01" + bytes(32))


# The log of this partition (offset: what), used below:
#  0 p1 data | 1 p2 data | 2 p1 ABORT | 3 p3 data | 4 p2 ABORT | 5 p3 COMMIT
#  6 p4 data | 7 p4 ABORT
INDEX = TransactionIndex(0, [txn(1, 0, 2, 1), txn(2, 1, 4, 3), txn(4, 6, 7, 8)])


@pytest.mark.parametrize(
    ("fetch", "upper", "expected", "complete"),
    [
        (0, 8, [1, 2, 4], True),  # everything
        (0, 1, [1], True),  # only p1 began below 1; its LSO 1 >= 1 ends the search
        (3, 5, [2], True),  # p1's marker is before 3
        (5, 6, [], True),  # nothing aborted overlaps [5, 6)
        (8, 9, [], False),  # past the last marker: later segments may matter
        (0, 100, [1, 2, 4], False),
    ],
)
def test_collect_aborted(fetch, upper, expected, complete):
    result = INDEX.collect_aborted(fetch, upper)
    assert [t.producer_id for t in result.aborted] == expected
    assert result.is_complete is complete


def test_append_requires_increasing_marker_offsets():
    index = TransactionIndex(0, [txn(1, 0, 5, 6)])
    with pytest.raises(ValueError, match="not after"):
        index.append(txn(2, 1, 5, 6))


def test_truncate_drops_entries_with_markers_at_or_after_offset():
    index = TransactionIndex(0, INDEX.entries)
    assert index.truncate_to(4) == 1
    assert [t.producer_id for t in index.entries] == [1]
    index.append(txn(9, 3, 4, 5))  # offsets may be reused after truncation


def test_collect_across_segments_finds_txn_aborted_in_a_later_segment():
    # p1 began at 5 in segment 0 and was aborted at 25 in segment 20; p2 aborted in segment 10.
    seg0 = TransactionIndex(0)
    seg10 = TransactionIndex(10, [txn(2, 11, 12, 5)])
    seg20 = TransactionIndex(20, [txn(1, 5, 25, 26)])
    indexes = [seg0, seg10, seg20]
    assert [t.producer_id for t in collect_aborted(indexes, 13, 20)] == [1]
    assert [t.producer_id for t in collect_aborted(indexes, 0, 100)] == [2, 1]
    assert collect_aborted(indexes, 26, 30) == []
    assert collect_aborted([], 0, 10) == []


def test_search_stops_at_first_complete_segment():
    seg0 = TransactionIndex(0, [txn(1, 0, 1, 2)])
    seg10 = TransactionIndex(10, [txn(2, 0, 11, 12)])  # would only be found by a full scan
    assert [t.producer_id for t in collect_aborted([seg0, seg10], 0, 2)] == [1]


def test_file_wrapper_persists_truncates_and_recovers(tmp_path):
    f = TransactionIndexFile.open(tmp_path, 100)
    assert not f.path.exists()
    f.append(txn(1, 100, 101, 102))
    f.append(txn(2, 102, 105, 106))
    f.flush()
    assert f.path.name == "00000000000000000100.txnindex"
    with open(f.path, "ab") as raw:
        raw.write(b"\x00" * 10)  # a torn entry from a crash
    g = TransactionIndexFile.open(tmp_path, 100)
    assert g.index.entries == f.index.entries
    assert g.path.stat().st_size == 68
    g.truncate_to(105)
    assert TransactionIndexFile.open(tmp_path, 100).index.entries == [txn(1, 100, 101, 102)]
    g.reset()
    assert not g.path.exists() and len(g.index) == 0
