"""The leader's cache of its newest committed batches (pure: no database)."""

from storage.pg.group_commit import BatchRow
from storage.pg.tail_cache import TailCache


def rows(*spans: tuple[int, int]) -> list[BatchRow]:
    return [BatchRow(base_offset=b, last_offset=last, max_timestamp=0, data=bytes(10 * (last - b + 1)))
            for b, last in spans]


def test_reads_start_at_the_batch_holding_the_offset_within_max_bytes_and_limit() -> None:
    cache = TailCache()
    cache.add(rows((0, 1), (2, 4), (5, 5), (6, 9)))
    assert cache.read(3, 1, limit=10) == ([bytes(30)], 5)  # at least one batch, whole
    assert cache.read(3, 40, limit=10) == ([bytes(30), bytes(10)], 6)
    assert cache.read(0, 1000, limit=6) == ([bytes(20), bytes(30), bytes(10)], 6)  # below the LSO only
    assert cache.read(10, 1000, limit=10) == ([], 10)
    assert cache.read(3, 29, limit=10, min_one=False) == ([], 3)  # KIP-74 later partition: none that won't fit
    assert cache.read(1, 39, limit=10, min_one=False) == ([bytes(20)], 2)


def test_offsets_older_than_the_cache_are_not_served() -> None:
    cache = TailCache(max_bytes=50)
    assert cache.read(0, 100, limit=0) is None
    cache.add(rows((0, 1), (2, 4)))
    cache.add(rows((5, 6)))  # 70 bytes: the oldest batch goes
    assert cache.read(1, 100, limit=7) is None
    assert cache.read(2, 100, limit=7) == ([bytes(30), bytes(20)], 7)
    cache.clear()
    assert cache.read(5, 100, limit=7) is None
