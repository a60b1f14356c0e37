import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.api import AbortedTxn, AppendOrigin
from storage.producer_state import NUM_BATCHES_TO_RETAIN, CompletedTxn, ProducerStateManager
from tests.storage.helpers import header, marker


class Log:
    """The partition log's use of ProducerStateManager: check, assign offsets, write, update."""

    def __init__(self, **kw):
        self.state = ProducerStateManager("t-0", **kw)
        self.end = 0
        self.aborted: list[AbortedTxn] = []

    def append(
        self, pid=1, epoch=0, seq=0, count=1, *, txn=False, origin=AppendOrigin.CLIENT, ts=1000
    ):
        h = header(pid, epoch, seq, count, 0, txn=txn, ts=ts)
        dup = self.state.check_append(h, origin)
        if dup is not None:
            return dup.first_offset, True
        h = header(pid, epoch, seq, count, self.end, txn=txn, ts=ts)
        self.end += count
        assert self.state.update(h) is None
        return h.base_offset, False

    def end_txn(self, pid=1, epoch=0, commit=True, coordinator_epoch=0):
        m = marker(commit, coordinator_epoch)
        h = header(pid, epoch, offset=self.end, control=True)
        self.state.check_append(h, AppendOrigin.COORDINATOR, m)
        self.end += 1
        completed = self.state.update(h, m)
        if completed and completed.is_aborted:
            self.aborted.append(completed.aborted_txn())
        return completed

    def lso(self):
        return self.state.last_stable_offset(self.end)


def expect(code, fn, *args, match=None, **kw):
    with pytest.raises(KafkaError, match=match) as info:
        fn(*args, **kw)
    assert info.value.code is code
    return info.value


# -- idempotence -------------------------------------------------------------------------------


def test_in_sequence_batches_are_accepted():
    log = Log()
    assert log.append(seq=0, count=3) == (0, False)
    assert log.append(seq=3, count=2) == (3, False)
    entry = log.state.last_entry(1)
    assert entry.last_seq == 4 and entry.last_data_offset == 4


def test_retry_of_any_of_last_five_batches_returns_original_offset():
    log = Log()
    offsets = [log.append(seq=i * 2, count=2)[0] for i in range(6)]
    # the first batch fell out of the window of 5
    for i in range(1, 6):
        assert log.append(seq=i * 2, count=2) == (offsets[i], True)
    assert log.end == 12
    expect(ErrorCode.out_of_order_sequence_number, log.append, seq=0, count=2)
    assert len(log.state.last_entry(1).batch_metadata) == NUM_BATCHES_TO_RETAIN


def test_duplicate_must_match_both_ends_of_the_sequence_range():
    log = Log()
    log.append(seq=0, count=3)
    expect(ErrorCode.out_of_order_sequence_number, log.append, seq=0, count=2)


def test_gap_is_out_of_order_with_expected_sequence_in_message():
    log = Log()
    log.append(seq=0, count=3)
    err = expect(ErrorCode.out_of_order_sequence_number, log.append, seq=5)
    assert "got 5, expected 3" in err.message and "t-0" in err.message


def test_unknown_producer_may_start_at_any_sequence():
    log = Log()
    assert log.append(pid=9, seq=77) == (0, False)
    assert log.append(pid=9, seq=78) == (1, False)


def test_new_epoch_must_start_at_zero():
    log = Log()
    log.append(epoch=0, seq=0, count=5)
    code = ErrorCode.out_of_order_sequence_number
    expect(code, log.append, epoch=1, seq=5, match="must start at 0")
    assert log.append(epoch=1, seq=0) == (5, False)
    assert log.state.last_entry(1).producer_epoch == 1


def test_older_epoch_is_invalid_producer_epoch():
    log = Log()
    log.append(epoch=3)
    err = expect(ErrorCode.invalid_producer_epoch, log.append, epoch=2, seq=1)
    assert "older than its last seen epoch 3" in err.message


def test_duplicate_of_older_epoch_is_fenced_not_deduplicated():
    log = Log()
    log.append(epoch=0, seq=0)
    log.append(epoch=1, seq=0)
    expect(ErrorCode.invalid_producer_epoch, log.append, epoch=0, seq=0)


def test_sequence_wraps_after_int32_max():
    log = Log()
    log.append(seq=2**31 - 2, count=2)
    assert log.append(seq=0) == (2, False)


def test_wrapped_batch_is_recognised_as_duplicate():
    log = Log()
    log.append(seq=2**31 - 1)
    assert log.append(seq=2**31 - 1) == (0, True)
    first, dup = log.append(seq=0, count=3)
    assert (first, dup) == (1, False)
    assert log.append(seq=0, count=3) == (1, True)


def test_coordinator_writes_are_not_sequence_checked():
    log = Log()
    log.append(seq=0)
    assert log.append(seq=9, origin=AppendOrigin.COORDINATOR) == (1, False)


def test_non_idempotent_batches_have_no_state():
    log = Log()
    assert log.append(pid=-1, epoch=-1, seq=-1) == (0, False)
    assert log.state.producers == {}
    assert log.state.map_end_offset == 1


def test_transactional_batch_without_producer_id_is_invalid_record():
    state = ProducerStateManager("t-0")
    expect(ErrorCode.invalid_record, state.check_append, header(pid=-1, epoch=-1, seq=-1, txn=True))


# -- transactions and the LSO ------------------------------------------------------------------


def test_first_transactional_batch_holds_back_the_lso_until_commit():
    log = Log()
    log.append(pid=2, seq=0)  # plain idempotent record at 0
    log.append(pid=1, seq=0, txn=True)  # txn begins at 1
    log.append(pid=2, seq=1)
    log.append(pid=1, seq=1, txn=True)
    assert log.state.first_unstable_offset() == 1
    assert log.lso() == 1
    completed = log.end_txn(pid=1, commit=True)
    assert completed == CompletedTxn(
        producer_id=1, first_offset=1, last_offset=4, is_aborted=False, last_stable_offset=5
    )
    assert log.lso() == log.end == 5 and log.aborted == []


def test_abort_records_aborted_txn_with_lso_of_other_open_txn():
    log = Log()
    log.append(pid=1, txn=True)  # 0
    log.append(pid=2, txn=True)  # 1
    log.end_txn(pid=1, commit=False)  # marker at 2
    assert log.aborted == [
        AbortedTxn(producer_id=1, first_offset=0, last_offset=2, last_stable_offset=1)
    ]
    assert log.lso() == 1
    log.end_txn(pid=2, commit=False)  # marker at 3
    assert log.aborted[-1] == AbortedTxn(
        producer_id=2, first_offset=1, last_offset=3, last_stable_offset=4
    )
    assert log.lso() == 4


def test_lso_never_exceeds_high_watermark():
    log = Log()
    log.append(txn=False)
    assert log.state.last_stable_offset(0) == 0


def test_marker_without_data_completes_nothing():
    log = Log()
    assert log.end_txn(pid=5, commit=False) is None
    assert log.aborted == [] and log.lso() == 1
    assert log.state.last_entry(5).coordinator_epoch == 0


def test_non_transactional_write_during_open_txn_is_invalid_txn_state():
    log = Log()
    log.append(txn=True)
    err = expect(ErrorCode.invalid_txn_state, log.append, seq=1, txn=False)
    assert "began at offset 0 is still open" in err.message


def test_next_transaction_after_marker_opens_at_its_first_offset():
    log = Log()
    log.append(seq=0, txn=True)
    log.end_txn()
    log.append(seq=1, txn=True)
    assert log.state.first_unstable_offset() == 2
    assert log.state.ongoing_transactions() == {1: 2}


def test_marker_with_older_epoch_is_rejected():
    log = Log()
    log.append(epoch=4, txn=True)
    expect(ErrorCode.invalid_producer_epoch, log.end_txn, epoch=3)


def test_marker_with_newer_epoch_fences_the_old_epoch():
    log = Log()
    log.append(epoch=4, seq=0, txn=True)
    log.end_txn(epoch=5, commit=False)  # coordinator bumped the epoch to abort a zombie
    expect(ErrorCode.invalid_producer_epoch, log.append, epoch=4, seq=1, txn=True)
    assert log.append(epoch=5, seq=0, txn=True)[1] is False


def test_marker_from_older_coordinator_epoch_is_fenced():
    log = Log()
    log.append(txn=True)
    log.end_txn(coordinator_epoch=3)
    log.append(seq=1, txn=True)
    expect(ErrorCode.transaction_coordinator_fenced, log.end_txn, coordinator_epoch=2)
    assert log.end_txn(coordinator_epoch=3) is not None


def test_unknown_control_type_is_ignored_by_update():
    state = ProducerStateManager("t-0")
    state.update(header(txn=True))
    assert state.update(header(offset=1, control=True), None) is None
    assert state.first_unstable_offset() == 0


# -- expiry ------------------------------------------------------------------------------------


def test_idle_producers_expire_but_not_with_an_open_txn():
    log = Log(producer_id_expiration_ms=1000)
    log.append(pid=1, ts=100)
    log.append(pid=2, ts=100, txn=True)
    log.append(pid=3, ts=900)
    assert log.state.remove_expired_producers(now_ms=1100) == [1]
    assert set(log.state.producers) == {2, 3}
    # once expired, any sequence is accepted again
    assert log.append(pid=1, seq=50, ts=1200)[1] is False


def test_truncate_fully_forgets_everything():
    log = Log()
    log.append(txn=True)
    log.state.truncate_fully_and_start_at(10)
    assert log.state.producers == {} and log.state.first_unstable_offset() is None
    assert log.state.map_end_offset == 10


def test_issue_11_open_transactions_oldest_first_with_start_time() -> None:
    state = ProducerStateManager("t-0")
    state.update(header(pid=1, txn=True, offset=0, ts=50), append_time_ms=9000)  # appended live
    state.update(header(pid=2, txn=True, offset=1, ts=60))  # replayed: the batch's own timestamp
    state.update(header(pid=1, seq=1, txn=True, offset=2, ts=70), append_time_ms=9500)
    assert [(t.producer_id, t.first_offset, t.start_timestamp, t.last_timestamp)
            for t in state.open_transactions()] == [(1, 0, 9000, 70), (2, 1, 60, 60)]
    state.update(header(pid=1, offset=3, control=True), marker(False, 0), append_time_ms=9900)
    assert [t.producer_id for t in state.open_transactions()] == [2]
    assert state.has_open_transactions
