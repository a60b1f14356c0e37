"""The cleaner's key map: one walk of a batch's records, compact keys, and the counts the copy pass
decides by (storage/cleaner/offset_map.py)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.record_batch import RecordBatchHeader
from protocol.records import Record, build_batch
from storage.cleaner.batch_filter import decode_raw_records, empty_batch
from storage.cleaner.offset_map import BYTES_PER_MAP_ENTRY, OffsetMap, map_key
from tests.storage.cleaner.helpers import compressed


def _batch(records: list[Record], base_offset: int = 0, codec: int = 0) -> tuple[RecordBatchHeader, bytes]:
    data = bytes(build_batch(records, base_offset=base_offset))
    if codec:
        data = compressed(data, codec)
    return RecordBatchHeader.parse(data), data


def _mapped(records: list[Record], first_dirty: int = 0, codec: int = 0) -> OffsetMap:
    h, data = _batch(records, codec=codec)
    keys = OffsetMap(1 << 20)
    keys.add_batch(data, h, first_dirty)
    keys.freeze()
    return keys


def test_short_keys_are_kept_as_they_are_and_long_ones_as_a_16_byte_digest():
    assert map_key(b"k" * 16) == b"k" * 16
    assert len(map_key(b"k" * 17)) == 16
    assert map_key(b"k" * 17) != map_key(b"k" * 18)
    assert map_key(b"x" * 1000) == map_key(b"x" * 1000)
    # the map's memory per entry covers a dict slot, a key of at most 16 bytes and its offset
    assert BYTES_PER_MAP_ENTRY >= 40 + 49 + 32


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_each_key_maps_to_its_latest_offset_from_first_dirty_on(codec):
    recs = [Record(key=b"a", value=b"1"), Record(key=b"b", value=b"2"), Record(key=None, value=b"3"),
            Record(key=b"a", value=b"4"), Record(key=b"c" * 40, value=None), Record(key=b"d", value=b"5")]
    keys = _mapped(recs, first_dirty=1, codec=codec)
    assert keys.offsets == {b"b": 1, b"a": 3, map_key(b"c" * 40): 4, b"d": 5}
    assert keys.get(b"c" * 40, -1) == 4 and keys.get(b"zz", -1) == -1
    assert keys.tombstone_batches == {0}
    # offsets 1, 3, 4 and 5 are their keys' latest
    assert [keys.kept_in(0, 5), keys.kept_in(0, 0), keys.kept_in(2, 3), keys.kept_in(6, 9)] == [4, 0, 1, 0]


def test_a_batch_without_a_null_value_is_not_marked_as_holding_a_tombstone():
    assert _mapped([Record(key=b"a", value=b""), Record(key=b"b", value=b"x")]).tombstone_batches == set()


def test_the_map_is_full_at_its_capacity():
    h, data = _batch([Record(key=b"k%d" % i, value=b"v") for i in range(3)])
    keys = OffsetMap(3)
    assert not keys.full
    keys.add_batch(data, h, 0)
    assert keys.full and len(keys) == 3


def test_an_emptied_batch_maps_nothing():
    h, data = _batch([Record(key=b"a", value=b"1")], base_offset=7)
    empty = empty_batch(h)
    keys = OffsetMap(10)
    keys.add_batch(empty, RecordBatchHeader.parse(empty), 0)
    assert len(keys) == 0


_headers = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2).map(tuple)
_records = st.lists(
    st.builds(Record, key=st.none() | st.binary(max_size=300), value=st.none() | st.binary(max_size=9000),
              headers=_headers),
    min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(records=_records, base=st.integers(0, 1 << 40), first_dirty_at=st.integers(0, 20))
def test_the_walk_agrees_with_decoding_every_record(records, base, first_dirty_at):
    h, data = _batch(records, base_offset=base)
    first_dirty = base + first_dirty_at
    keys = OffsetMap(1 << 20)
    keys.add_batch(data, h, first_dirty)
    want: dict[bytes, int] = {}
    for r in decode_raw_records(data, h):
        if r.key is not None and r.offset >= first_dirty:
            want[map_key(r.key)] = r.offset
    assert keys.offsets == want
    tombstones = any(r.key is not None and r.offset >= first_dirty and not r.has_value
                     for r in decode_raw_records(data, h))
    assert keys.tombstone_batches == ({base} if tombstones else set())
