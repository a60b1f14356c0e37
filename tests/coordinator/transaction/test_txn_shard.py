"""TxnShard's operations, with no I/O: what each decides (records, answer, effects) and that a
decision changes nothing until its records are replayed."""

import logging

from coordinator.runtime import ApiError
from coordinator.transaction.log import TxnLogEntry
from coordinator.transaction.messages import Complete, CountOutcome, LogLine, SendMarkers
from coordinator.transaction.metadata import MAX_EPOCH, ProducerIdAndEpoch, TxnTransition
from coordinator.transaction.outcomes import AbortCause
from coordinator.transaction.shard import TxnShard
from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode
from storage.api import TopicPartition

TP = TopicPartition("orders", 0)


def persist(shard, result):
    """The runtime's part: the records are durable, replay them."""
    shard.begin(result.records)
    for record in result.records:
        shard.replay(record)
    return result.response


def initialised(shard: TxnShard, tid: str = "tx") -> ProducerIdAndEpoch:
    answer = persist(shard, shard.init_producer_id(tid, 60_000, None, new_ids=[7], now_ms=1, server_tv=0))
    assert isinstance(answer, ProducerIdAndEpoch)
    return answer


def test_init_producer_id_of_a_new_id_decides_without_installing_it():
    shard = TxnShard(0)
    assert shard.producer_ids_for_init("tx") == 1
    result = shard.init_producer_id("tx", 60_000, None, new_ids=[7], now_ms=1, server_tv=0)
    assert shard.get("tx") is None  # only its record, once replayed, creates it
    assert [r.transition.state for r in result.records] == [TxnState.EMPTY]
    assert result.response == ProducerIdAndEpoch(producer_id=7, epoch=0)
    persist(shard, result)
    assert (shard.get("tx").producer_id, shard.get("tx").producer_epoch) == (7, 0)


def test_a_refusal_is_a_value_with_kafkas_code_and_message():
    shard = TxnShard(0)
    result = shard.add_partitions("tx", 7, 0, [TP], tv2=False, now_ms=1)
    assert result.records == () and isinstance(result.response, ApiError)
    assert result.response.code is ErrorCode.invalid_producer_id_mapping
    assert "call InitProducerId first" in result.response.message


def test_init_producer_id_fencing_an_open_transaction_writes_the_abort_and_answers_concurrent():
    shard = TxnShard(0)
    p = initialised(shard)
    persist(shard, shard.add_partitions("tx", p.producer_id, p.epoch, [TP], tv2=False, now_ms=2))
    result = shard.init_producer_id("tx", 60_000, None, new_ids=[], now_ms=3, server_tv=0)
    assert result.response.code is ErrorCode.concurrent_transactions
    (record,) = result.records
    assert (record.transition.state, record.transition.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    counted, logged, markers = result.effects
    assert counted == CountOutcome(False, AbortCause.FENCING) and logged.level == logging.WARNING
    assert markers == SendMarkers(markers.marker) and markers.marker.partitions == {TP}
    assert not markers.marker.commit and markers.marker.producer_epoch == 1


def test_end_txn_asks_for_the_markers_once_prepare_commit_is_durable():
    shard = TxnShard(0)
    p = initialised(shard)
    persist(shard, shard.add_partitions("tx", p.producer_id, p.epoch, [TP], tv2=False, now_ms=2))
    result = shard.end_txn("tx", p.producer_id, p.epoch, commit=True, tv2=False, new_ids=[], now_ms=3)
    assert shard.get("tx").state is TxnState.ONGOING
    assert result.effects[0] == CountOutcome(True)
    assert result.effects[1].marker.commit and result.effects[1].marker.partitions == {TP}
    persist(shard, result)
    assert shard.get("tx").state is TxnState.PREPARE_COMMIT
    done = shard.complete("tx", p.epoch, now_ms=4)
    assert isinstance(done.effects[0], LogLine)
    persist(shard, done)
    assert shard.get("tx").state is TxnState.COMPLETE_COMMIT
    assert shard.complete("tx", p.epoch, now_ms=5).records == ()  # already completed: nothing


def test_v2_abort_with_nothing_open_completes_at_once():
    shard = TxnShard(0)
    p = initialised(shard)
    result = shard.end_txn("tx", p.producer_id, p.epoch, commit=False, tv2=True, new_ids=[], now_ms=3)
    assert result.effects == (CountOutcome(False), Complete("tx", p.epoch + 1))


def test_v2_empty_abort_at_an_exhausted_epoch_moves_to_a_new_producer_id():
    """Found by test_txn_shard_machine: the coordinator allocated the next producer id only for an
    open transaction, so an abort with nothing open at the last epoch failed on an empty list
    (UNKNOWN_SERVER_ERROR) instead of moving the producer to its next id."""
    shard = TxnShard(0)
    shard.replay(TxnLogEntry(transactional_id="tx", transition=TxnTransition(
        state=TxnState.COMPLETE_ABORT, producer_id=7, last_producer_id=-1, producer_epoch=MAX_EPOCH - 1,
        last_producer_epoch=-1, txn_timeout_ms=60_000, topic_partitions=frozenset(), txn_start_timestamp=-1,
        txn_last_update_timestamp=0, client_transaction_version=2)))
    assert shard.producer_ids_for_end_txn("tx", tv2=True) == 1
    result = shard.end_txn("tx", 7, MAX_EPOCH - 1, commit=False, tv2=True, new_ids=[8], now_ms=3)
    assert result.response == ProducerIdAndEpoch(producer_id=8, epoch=0)


def test_v2_empty_abort_after_a_timeout_fenced_the_last_epoch_stays_within_a_short():
    """Found by test_txn_shard_machine: a timed-out abort at MAX_EPOCH - 1 fences the epoch to
    MAX_EPOCH; an empty abort after it moved the old id to MAX_EPOCH + 1, which no producer epoch
    can hold. The producer moves to its next id at epoch 0 and the old id stays at MAX_EPOCH."""
    shard = TxnShard(0)
    shard.replay(TxnLogEntry(transactional_id="tx", transition=TxnTransition(
        state=TxnState.COMPLETE_ABORT, producer_id=7, last_producer_id=-1, producer_epoch=MAX_EPOCH,
        last_producer_epoch=MAX_EPOCH - 1, txn_timeout_ms=60_000, topic_partitions=frozenset(),
        txn_start_timestamp=-1, txn_last_update_timestamp=0, client_transaction_version=2)))
    result = shard.end_txn("tx", 7, MAX_EPOCH, commit=False, tv2=True, new_ids=[8], now_ms=3)
    assert result.response == ProducerIdAndEpoch(producer_id=8, epoch=0)
    assert [r.transition.producer_epoch for r in result.records] == [MAX_EPOCH]


def test_a_failed_write_reverts_the_pending_transition():
    shard = TxnShard(0)
    p = initialised(shard)
    result = shard.add_partitions("tx", p.producer_id, p.epoch, [TP], tv2=False, now_ms=2)
    shard.begin(result.records)
    assert shard.get("tx").pending_state is TxnState.ONGOING
    shard.revert(result.records)
    assert shard.get("tx").pending_state is None and shard.get("tx").state is TxnState.EMPTY


def test_expiry_writes_a_tombstone_whose_replay_removes_the_id():
    shard = TxnShard(0)
    initialised(shard)
    assert shard.expired(now_ms=10_001, expiration_ms=10_000) == ["tx"]
    result = shard.expire("tx", expiration_ms=10_000)
    assert result.records[0].transition.state is TxnState.DEAD
    persist(shard, result)
    assert shard.transactions == {}
