"""Every TransactionMetadata transition and error, after Kafka's TransactionCoordinatorTest."""

import itertools

import pytest

from coordinator.transaction.metadata import (
    MAX_EPOCH,
    ProducerIdAndEpoch,
    TransactionMetadata,
    TxnTransition,
)
from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
OFFSETS = TopicPartition("__consumer_offsets", 7)
ids = itertools.count(100)


def persist(md: TransactionMetadata, t: TxnTransition | None) -> TransactionMetadata:
    assert t is not None
    md.mark_pending(t)
    md.complete_transition(t)
    return md


def init(md: TransactionMetadata, timeout=60000, expected=None, now=10) -> TxnTransition:
    return md.prepare_init_producer_id(
        txn_timeout_ms=timeout, expected=expected, now_ms=now, new_producer_id=lambda: next(ids)
    )


def fresh(txn_id="orders-1") -> TransactionMetadata:
    md = TransactionMetadata.new(txn_id, producer_id=42, txn_timeout_ms=60000, now_ms=0)
    return persist(md, init(md))


def ongoing(*partitions: TopicPartition, now=20) -> TransactionMetadata:
    md = fresh()
    return persist(md, md.prepare_add_partitions(
        producer_id=42, producer_epoch=0, partitions=partitions or (TP0,), now_ms=now
    ))


def end(md, commit=True, epoch=None, pid=42, now=30):
    epoch = md.producer_epoch if epoch is None else epoch
    return md.prepare_end_txn(producer_id=pid, producer_epoch=epoch, commit=commit, now_ms=now)


def expect(code, fn, *args, match=None, **kw) -> KafkaError:
    with pytest.raises(KafkaError, match=match) as info:
        fn(*args, **kw)
    assert info.value.code is code, info.value
    return info.value


def same(md: TransactionMetadata) -> TxnTransition:
    return md.snapshot()


# -- InitProducerId --------------------------------------------------------------------------


def test_first_init_gives_epoch_zero_and_mutates_nothing_until_completed():
    md = TransactionMetadata.new("orders-1", producer_id=42, txn_timeout_ms=1, now_ms=0)
    before = same(md)
    t = init(md, timeout=60000, now=5)
    assert (t.state, t.producer_id, t.producer_epoch, t.last_producer_epoch) == (
        TxnState.EMPTY, 42, 0, -1
    )
    assert (t.txn_timeout_ms, t.txn_last_update_timestamp, t.txn_start_timestamp) == (60000, 5, -1)
    assert same(md) == before
    persist(md, t)
    assert md.producer_epoch == 0 and md.pending_state is None


@pytest.mark.parametrize("state", ["empty", "commit", "abort"])
def test_init_bumps_epoch_from_empty_and_complete_states(state):
    md = fresh()
    if state != "empty":
        md = ongoing()
        persist(md, end(md, commit=state == "commit"))
        persist(md, md.prepare_complete(40))
        assert md.state.is_complete
    t = init(md)
    assert (t.state, t.producer_epoch, t.topic_partitions) == (TxnState.EMPTY, 1, frozenset())


def test_init_while_markers_are_written_is_concurrent_transactions():
    md = ongoing()
    persist(md, end(md))
    err = expect(ErrorCode.concurrent_transactions, init, md)
    assert "PrepareCommit" in err.message and "'orders-1'" in err.message


def test_init_while_a_write_is_pending_is_concurrent_transactions():
    md = fresh()
    md.mark_pending(init(md))
    expect(ErrorCode.concurrent_transactions, init, md)
    md.cancel_pending()
    assert init(md).producer_epoch == 1


def test_init_over_an_ongoing_transaction_fences_and_aborts_it():
    md = ongoing(TP0, TP1)
    t = init(md, now=50)
    assert t.state is TxnState.PREPARE_ABORT
    assert t.producer_epoch == 1 and t.last_producer_epoch == -1
    assert t.topic_partitions == {TP0, TP1}  # the markers go to every partition
    persist(md, t)
    err = expect(ErrorCode.producer_fenced, end, md, epoch=0)
    assert "a newer producer called InitProducerId" in err.message
    assert "producer epoch is now 1" in err.message
    persist(md, md.prepare_complete(60))
    assert md.state is TxnState.COMPLETE_ABORT
    assert init(md).producer_epoch == 2  # the retrying client gets the second bump


def test_epoch_exhaustion_rotates_to_a_new_producer_id():
    md = fresh()
    md.producer_epoch = MAX_EPOCH - 1
    t = init(md)
    assert (t.producer_id, t.producer_epoch, t.last_producer_id) == (t.producer_id, 0, 42)
    assert t.producer_id != 42 and t.last_producer_epoch == -1


def test_kip360_recovery_with_current_epoch_bumps_and_remembers_last_epoch():
    md = fresh()
    t = init(md, expected=ProducerIdAndEpoch(producer_id=42, epoch=0))
    assert (t.producer_epoch, t.last_producer_epoch) == (1, 0)
    persist(md, t)
    # the same request retried after a lost answer returns the same epoch
    retry = init(md, expected=ProducerIdAndEpoch(producer_id=42, epoch=0))
    assert (retry.producer_epoch, retry.last_producer_epoch) == (1, 0)


def test_kip360_with_a_stale_epoch_is_fenced():
    md = fresh()
    persist(md, init(md))
    persist(md, init(md))  # epoch 2, last epoch -1
    err = expect(ErrorCode.producer_fenced, init, md,
                 expected=ProducerIdAndEpoch(producer_id=42, epoch=0))
    assert "producer epoch 0" in err.message


def test_kip360_with_a_foreign_producer_id_is_fenced():
    md = fresh()
    err = expect(ErrorCode.producer_fenced, init, md,
                 expected=ProducerIdAndEpoch(producer_id=7, epoch=3))
    assert "names producer 7 epoch 3" in err.message


def test_kip360_on_a_fresh_id_accepts_any_expected_producer():
    md = TransactionMetadata.new("orders-1", producer_id=42, txn_timeout_ms=1, now_ms=0)
    t = init(md, expected=ProducerIdAndEpoch(producer_id=7, epoch=3))
    assert (t.producer_id, t.producer_epoch) == (42, 0)


def test_kip360_retry_after_rotation_is_accepted():
    md = fresh()
    md.producer_epoch = MAX_EPOCH - 1
    expected = ProducerIdAndEpoch(producer_id=42, epoch=MAX_EPOCH - 1)
    t = init(md, expected=expected)
    assert t.last_producer_epoch == MAX_EPOCH - 1 and t.producer_epoch == 0
    persist(md, t)
    # a retry naming the old id and its exhausted epoch gets the rotated id back, unbumped
    retry = init(md, expected=expected)
    assert (retry.producer_id, retry.producer_epoch) == (t.producer_id, 0)
    # the old id with a non-exhausted epoch is a zombie
    expect(ErrorCode.producer_fenced, init, md,
           expected=ProducerIdAndEpoch(producer_id=42, epoch=5))


# -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------


def test_add_partitions_starts_the_transaction():
    md = fresh()
    t = md.prepare_add_partitions(producer_id=42, producer_epoch=0, partitions=[TP0], now_ms=20)
    assert (t.state, t.topic_partitions, t.txn_start_timestamp) == (TxnState.ONGOING, {TP0}, 20)
    persist(md, t)
    t = md.prepare_add_partitions(producer_id=42, producer_epoch=0, partitions=[OFFSETS], now_ms=25)
    assert t.topic_partitions == {TP0, OFFSETS} and t.txn_start_timestamp == 20


def test_adding_known_partitions_needs_no_write():
    md = ongoing(TP0, TP1)
    assert md.prepare_add_partitions(
        producer_id=42, producer_epoch=0, partitions=[TP1], now_ms=30
    ) is None


def test_add_partitions_after_complete_starts_a_new_transaction():
    md = ongoing(TP0)
    persist(md, end(md))
    persist(md, md.prepare_complete(40))
    t = md.prepare_add_partitions(producer_id=42, producer_epoch=0, partitions=[TP1], now_ms=50)
    assert t.topic_partitions == {TP1} and t.txn_start_timestamp == 50


@pytest.mark.parametrize(
    ("pid", "epoch", "code"),
    [
        (41, 0, ErrorCode.invalid_producer_id_mapping),
        (42, 1, ErrorCode.producer_fenced),
        (42, -1, ErrorCode.producer_fenced),
    ],
)
def test_add_partitions_with_wrong_producer(pid, epoch, code):
    md = fresh()
    expect(code, md.prepare_add_partitions, producer_id=pid, producer_epoch=epoch,
           partitions=[TP0], now_ms=1)


def test_add_partitions_while_completing_is_concurrent():
    md = ongoing()
    persist(md, end(md, commit=False))
    expect(ErrorCode.concurrent_transactions, md.prepare_add_partitions, producer_id=42,
           producer_epoch=0, partitions=[TP1], now_ms=1)


# -- EndTxn ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("commit", "prepare", "complete"),
    [
        (True, TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT),
        (False, TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT),
    ],
)
def test_end_txn_prepares_then_completes(commit, prepare, complete):
    md = ongoing(TP0, TP1)
    t = end(md, commit=commit, now=30)
    assert (t.state, t.topic_partitions, t.producer_epoch) == (prepare, {TP0, TP1}, 0)
    persist(md, t)
    c = md.prepare_complete(now_ms=40)
    assert (c.state, c.topic_partitions, c.txn_last_update_timestamp) == (complete, frozenset(), 40)
    persist(md, c)


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_retry_after_completion_is_ok(commit):
    md = ongoing()
    persist(md, end(md, commit))
    expect(ErrorCode.concurrent_transactions, end, md, commit)  # markers in flight
    persist(md, md.prepare_complete(40))
    assert end(md, commit) is None


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_opposite_of_last_result_is_invalid(commit):
    md = ongoing()
    persist(md, end(md, commit))
    err = expect(ErrorCode.invalid_txn_state, end, md, not commit)
    assert ("committed" if commit else "aborted") in err.message
    persist(md, md.prepare_complete(40))
    expect(ErrorCode.invalid_txn_state, end, md, not commit)


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_on_empty_is_invalid_txn_state(commit):
    md = fresh()
    err = expect(ErrorCode.invalid_txn_state, end, md, commit)
    assert "no transaction is open" in err.message


def test_end_txn_with_wrong_producer_id():
    md = ongoing()
    expect(ErrorCode.invalid_producer_id_mapping, end, md, pid=7)


def test_end_txn_with_old_epoch_after_timeout_says_so():
    md = ongoing()
    md.producer_epoch = 6
    md.txn_timeout_ms = 60000
    t = md.prepare_timeout_abort(now_ms=70000)
    assert t.state is TxnState.PREPARE_ABORT and t.producer_epoch == 7
    persist(md, t)
    err = expect(ErrorCode.producer_fenced, end, md, commit=True, epoch=6)
    assert err.message == (
        "producer epoch 6 of 'orders-1' is fenced: transaction of 'orders-1' timed out after "
        "60000 ms and was aborted by the broker; producer epoch is now 7"
    )


def test_end_txn_with_newer_epoch_than_known_is_fenced():
    md = ongoing()
    expect(ErrorCode.producer_fenced, end, md, epoch=3)


def test_end_txn_while_write_pending_is_concurrent():
    md = ongoing()
    md.mark_pending(end(md))
    expect(ErrorCode.concurrent_transactions, end, md)


# -- timeouts and expiry -----------------------------------------------------------------------


def test_timeout_only_for_ongoing_past_its_timeout():
    md = ongoing(now=1000)
    assert not md.is_timed_out(61000)
    assert md.is_timed_out(61001)
    md.mark_pending(end(md))
    assert not md.is_timed_out(99999)


def test_fence_only_applies_to_ongoing():
    md = fresh()
    expect(ErrorCode.invalid_txn_state, md.prepare_timeout_abort, 1)


def test_fence_at_max_epoch_does_not_overflow():
    md = ongoing()
    md.producer_epoch = MAX_EPOCH
    assert md.prepare_timeout_abort(1).producer_epoch == MAX_EPOCH


def test_expiry_and_dead():
    md = fresh()
    assert md.is_expired(now_ms=10 + 1000, expiration_ms=1000)
    assert not md.is_expired(now_ms=10 + 999, expiration_ms=1000)
    t = md.prepare_dead()
    assert t.state is TxnState.DEAD
    ongoing_md = ongoing()
    assert not ongoing_md.is_expired(now_ms=10**9, expiration_ms=1)


def test_load_adopts_a_persisted_state_without_checks():
    md = fresh()
    t = ongoing(TP0).snapshot()
    md.load(t)
    assert md.snapshot() == t
