"""OffsetStore: plain commits, transactional offsets pending until their marker, retention."""

from coordinator.group.offsets import OffsetAndMetadata, OffsetStore
from storage.api import TopicPartition

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def oam(offset: int, record_offset: int | None = None, ts: int = 0) -> OffsetAndMetadata:
    return OffsetAndMetadata(
        committed_offset=offset, commit_timestamp=ts, record_offset=record_offset
    )


def test_plain_commit_is_visible() -> None:
    store = OffsetStore()
    store.commit({TP0: oam(5)})
    assert store.get(TP0) == oam(5) and store.get(TP1) is None and len(store) == 1


def test_pending_offsets_are_invisible_until_commit_marker() -> None:
    store = OffsetStore()
    store.commit({TP0: oam(1, record_offset=0)})
    store.add_pending(7, {TP0: oam(10, record_offset=1), TP1: oam(11, record_offset=1)})
    assert store.get(TP0) == oam(1, 0) and store.get(TP1) is None
    assert store.is_pending(TP0) and store.is_pending(TP1)
    applied = store.complete_txn(7, commit=True)
    assert applied == {TP0: oam(10, 1), TP1: oam(11, 1)}
    assert store.get(TP0) == oam(10, 1) and not store.is_pending(TP0) and not store.is_pending(TP1)


def test_abort_drops_pending_offsets() -> None:
    store = OffsetStore()
    store.commit({TP0: oam(1, record_offset=0)})
    store.add_pending(7, {TP0: oam(10, record_offset=1)})
    assert store.complete_txn(7, commit=False) == {}
    assert store.get(TP0) == oam(1, 0) and store.has_offsets()
    assert not store.is_pending(TP0)


def test_later_txn_offset_commit_of_same_producer_overwrites() -> None:
    store = OffsetStore()
    store.add_pending(7, {TP0: oam(10, record_offset=1)})
    store.add_pending(7, {TP0: oam(12, record_offset=2)})
    store.complete_txn(7, commit=True)
    assert store.get(TP0) == oam(12, 2)


def test_plain_commit_written_after_the_txn_record_wins() -> None:
    store = OffsetStore()
    store.add_pending(7, {TP0: oam(10, record_offset=1)})
    store.commit({TP0: oam(20, record_offset=2)})
    assert store.complete_txn(7, commit=True) == {}
    assert store.get(TP0) == oam(20, 2)


def test_producers_are_independent() -> None:
    store = OffsetStore()
    store.add_pending(1, {TP0: oam(10, 1)})
    store.add_pending(2, {TP1: oam(20, 2)})
    store.complete_txn(2, commit=False)
    assert store.is_pending(TP0) and not store.is_pending(TP1)
    store.complete_txn(1, commit=True)
    assert store.get(TP0) == oam(10, 1) and store.get(TP1) is None


def test_unknown_producer_completion_is_a_no_op() -> None:
    assert OffsetStore().complete_txn(99, commit=True) == {}


def test_delete() -> None:
    store = OffsetStore()
    store.commit({TP0: oam(1), TP1: oam(2)})
    assert store.delete([TP0, TopicPartition("u", 0)]) == [TP0]
    assert store.delete([TP1]) == [TP1] and not store.has_offsets()


def test_delete_drops_pending_offsets_of_the_partition() -> None:
    """As Kafka's replay of an offset tombstone: a transaction's pending offset goes too."""
    store = OffsetStore()
    store.add_pending(7, {TP0: oam(1), TP1: oam(2)})
    store.add_pending(8, {TP0: oam(3)})
    assert store.delete([TP0]) == []
    assert not store.is_pending(TP0) and store.is_pending(TP1) and 8 not in store.pending
    assert store.complete_txn(7, commit=True) == {TP1: oam(2)}


def test_retention_from_commit_timestamp() -> None:
    store = OffsetStore()
    store.commit({TP0: oam(1, ts=0), TP1: oam(2, ts=50)})
    assert store.expired(99, 100) == []
    assert store.expired(100, 100) == [TP0]
    assert store.get(TP1) is not None


def test_retention_from_base_timestamp_keeps_pending_and_kept_topics() -> None:
    store = OffsetStore()
    u0 = TopicPartition("u", 0)
    store.commit({TP0: oam(1), TP1: oam(2), u0: oam(3)})
    store.add_pending(7, {TP1: oam(9, 1)})
    assert store.expired(1_000, 100, base_timestamp=950) == []
    assert store.expired(1_050, 100, base_timestamp=950, keep_topics={"u"}) == [TP0]
    assert set(store.committed) == {TP0, TP1, u0}, "finding them removes nothing: their tombstones do"


def test_explicit_expire_timestamp_wins() -> None:
    store = OffsetStore()
    store.commit(
        {TP0: OffsetAndMetadata(committed_offset=1, commit_timestamp=0, expire_timestamp=10)}
    )
    assert store.expired(9, 1_000_000) == []
    assert store.expired(10, 1_000_000) == [TP0]
