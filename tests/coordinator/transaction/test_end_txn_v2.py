"""EndTxn under Transactions V2 (KIP-890 part 2), after Kafka's TransactionCoordinatorTest cases for
TV_2: the epoch bump per transaction, retries told apart by the epoch, epoch overflow to a new
producer id, the empty abort, and V1 and V2 requests on the same transactional id."""

import pytest

from coordinator.transaction.end_txn import decide_end_txn
from coordinator.transaction.metadata import MAX_EPOCH, ProducerIdAndEpoch, TransactionMetadata
from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode
from tests.coordinator.transaction.test_txn_metadata import TP0, TP1, expect, fresh, persist

NEW_ID = 777


def ongoing_v2(md: TransactionMetadata | None = None, *partitions) -> TransactionMetadata:
    md = md or fresh()
    return persist(md, md.prepare_add_partitions(producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                                                 partitions=partitions or (TP0,), now_ms=20, client_tv=2))


def end_v2(md: TransactionMetadata, commit=True, epoch=None, pid=None, tv2=True):
    return decide_end_txn(md, producer_id=md.producer_id if pid is None else pid,
                          producer_epoch=md.producer_epoch if epoch is None else epoch, commit=commit,
                          tv2=tv2, now_ms=30, new_producer_id=lambda: NEW_ID)


def finish(md: TransactionMetadata, decision) -> TransactionMetadata:
    persist(md, decision.transition)
    return persist(md, md.prepare_complete(40))


@pytest.mark.parametrize("commit", [True, False])
def test_every_end_txn_bumps_the_epoch_and_answers_it(commit):
    md = ongoing_v2(None, TP0, TP1)
    decision = end_v2(md, commit)
    t = decision.transition
    assert t.state is (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT)
    assert (t.producer_epoch, t.last_producer_epoch, t.client_transaction_version) == (1, 0, 2)
    assert t.topic_partitions == {TP0, TP1}  # the markers go there with epoch 1
    assert decision.result == ProducerIdAndEpoch(producer_id=42, epoch=1)
    finish(md, decision)
    assert (md.state.is_complete, md.producer_epoch) == (True, 1)


def test_v1_end_txn_keeps_the_epoch():
    md = ongoing_v2()
    decision = end_v2(md, tv2=False)
    assert decision.transition.producer_epoch == 0
    assert decision.result == ProducerIdAndEpoch(producer_id=42, epoch=0)


def test_retry_with_the_previous_epoch_is_recognised():
    md = ongoing_v2()
    persist(md, end_v2(md).transition)  # PrepareCommit at epoch 1
    expect(ErrorCode.concurrent_transactions, end_v2, md, epoch=0)  # markers still being written
    # Kafka's V2 path answers any EndTxn CONCURRENT_TRANSACTIONS until the markers are written,
    # before looking at the epoch: the opposite outcome, and the next transaction's (empty) abort
    # at the bumped epoch, which franz-go sends at once (its TestTxnEtl was fenced here)
    expect(ErrorCode.concurrent_transactions, end_v2, md, commit=False, epoch=0)
    expect(ErrorCode.concurrent_transactions, end_v2, md, commit=False, epoch=1)
    persist(md, md.prepare_complete(40))
    retry = end_v2(md, epoch=0)
    assert retry.transition is None and retry.result == ProducerIdAndEpoch(producer_id=42, epoch=1)
    expect(ErrorCode.invalid_txn_state, end_v2, md, commit=False, epoch=0)  # the opposite outcome
    expect(ErrorCode.producer_fenced, end_v2, md, epoch=5)
    expect(ErrorCode.invalid_txn_state, end_v2, md)  # epoch 1 commit: nothing open


@pytest.mark.parametrize("state", ["empty", "complete_commit", "complete_abort"])
def test_an_abort_with_nothing_added_succeeds_and_bumps_the_epoch(state):
    md = fresh()
    if state != "empty":
        md = ongoing_v2(md)
        finish(md, end_v2(md, commit=state == "complete_commit"))
    epoch = md.producer_epoch
    decision = end_v2(md, commit=False)
    t = decision.transition
    assert (t.state, t.topic_partitions, t.producer_epoch) == (TxnState.PREPARE_ABORT, frozenset(), epoch + 1)
    assert t.txn_start_timestamp == 30  # Kafka: the time of the abort, as nothing started it
    assert decision.result.epoch == epoch + 1
    # V1 still refuses it, as Kafka does for EndTxn v4 and older
    if state != "complete_abort":
        expect(ErrorCode.invalid_txn_state, end_v2, md, commit=False, tv2=False)


def test_exhausted_epoch_moves_to_a_new_producer_id_after_the_markers():
    md = fresh()
    md.producer_epoch = MAX_EPOCH - 1
    ongoing_v2(md)
    decision = end_v2(md)
    t = decision.transition
    # markers carry the old id at the last epoch; the producer continues with the new id at 0
    assert (t.producer_id, t.producer_epoch, t.next_producer_id) == (42, MAX_EPOCH, NEW_ID)
    assert decision.result == ProducerIdAndEpoch(producer_id=NEW_ID, epoch=0)
    persist(md, t)
    persist(md, md.prepare_complete(40))
    assert (md.producer_id, md.producer_epoch, md.last_producer_id) == (NEW_ID, 0, 42)
    # a retry of that EndTxn with the old id and epoch is answered with the new ones
    retry = end_v2(md, pid=42, epoch=MAX_EPOCH - 1)
    assert retry.transition is None and retry.result == ProducerIdAndEpoch(producer_id=NEW_ID, epoch=0)
    expect(ErrorCode.invalid_producer_id_mapping, end_v2, md, pid=42, epoch=3)


def test_v2_errors_keep_their_v1_meaning():
    md = ongoing_v2()
    expect(ErrorCode.invalid_producer_id_mapping, end_v2, md, pid=43)
    expect(ErrorCode.producer_fenced, end_v2, md, epoch=1)
    md.mark_pending(md.snapshot())
    expect(ErrorCode.concurrent_transactions, end_v2, md)


def test_a_v1_transaction_ended_by_a_v2_client_switches_at_the_boundary():
    # Kafka's upgrade path: the producer began under V1; once the level rises it sends EndTxn v5
    md = fresh()
    persist(md, md.prepare_add_partitions(producer_id=42, producer_epoch=0, partitions=[TP0], now_ms=20))
    decision = end_v2(md, tv2=True)
    assert decision.result.epoch == 1 and decision.transition.client_transaction_version == 2


def test_fencing_bumps_the_epoch_once_under_either_transaction_version():
    # Kafka 4.4 (KAFKA-19367): the fence bumps the epoch and the abort that follows does not bump
    # it again under V2; the record is marked V2 then (what a Kafka 4.4 node writes)
    md = ongoing_v2()
    v2 = md.prepare_timeout_abort(now_ms=99, server_tv=2)
    assert (v2.producer_epoch, v2.last_producer_epoch, v2.client_transaction_version) == (1, -1, 2)
    assert md.prepare_timeout_abort(now_ms=99, server_tv=1).producer_epoch == 1
    md.producer_epoch = MAX_EPOCH - 1
    assert md.prepare_timeout_abort(now_ms=99, server_tv=2).producer_epoch == MAX_EPOCH  # never past it


def test_a_late_end_txn_after_a_fence():
    """Kafka 4.4: a V2 producer's late commit after the fence is one epoch behind, which V2 reads as
    a retry of an ended transaction: INVALID_TXN_STATE; a V1 request (endTransactionWithTV1) must
    name the current epoch: PRODUCER_FENCED."""
    md = ongoing_v2()
    persist(md, md.prepare_timeout_abort(now_ms=99, server_tv=2))
    persist(md, md.prepare_complete(now_ms=100))
    expect(ErrorCode.invalid_txn_state, end_v2, md, epoch=0)
    expect(ErrorCode.producer_fenced, end_v2, md, epoch=0, tv2=False)


@pytest.mark.parametrize("commit", [True, False])
def test_a_v1_retry_of_an_ended_v2_transaction_succeeds(commit):
    # Kafka's endTransactionWithTV1: the same epoch and the same outcome again is a retry (NONE)
    md = ongoing_v2()
    finish(md, end_v2(md, commit=commit))
    decision = end_v2(md, commit=commit, tv2=False)
    assert decision.transition is None and decision.result.epoch == md.producer_epoch
    expect(ErrorCode.invalid_txn_state, end_v2, md, commit=not commit, tv2=False)
