import pytest

from coordinator.transaction.metadata import TransactionMetadata
from coordinator.transaction.verification import add_partitions_for_produce, verify_transactional_produce
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition
from tests.storage.helpers import header

TP, OTHER = TopicPartition("t", 0), TopicPartition("t", 1)


class Coordinator:
    def __init__(self, md):
        self.md = md

    def describe(self, txn_id):
        return self.md if self.md and txn_id == self.md.transactional_id else None


def ongoing(*partitions):
    md = TransactionMetadata.new("tx", producer_id=5, txn_timeout_ms=1000, now_ms=0)
    t = md.prepare_init_producer_id(txn_timeout_ms=1000, expected=None, now_ms=0, new_producer_id=lambda: 0)
    md.complete_transition(t)
    if partitions:
        md.complete_transition(md.prepare_add_partitions(producer_id=5, producer_epoch=0,
                                                         partitions=partitions, now_ms=1))
    return Coordinator(md)


def check(coordinator, tp=TP, txn=True, open_here=False, txn_id="tx", pid=5, epoch=0, version=10):
    verify_transactional_produce(coordinator, txn_id, tp, header(pid=pid, epoch=epoch, txn=txn), open_here,
                                 version)


def test_added_partition_passes():
    check(ongoing(TP))


def test_partition_not_added_is_invalid_txn_state():
    with pytest.raises(KafkaError) as info:
        check(ongoing(TP), tp=OTHER)
    assert info.value.code is ErrorCode.invalid_txn_state
    assert "t-1 was not added to the transaction of 'tx'" in info.value.message


def test_produce_v11_is_told_to_abort_instead():
    # Produce v11 (KIP-890 part 1) knows TRANSACTION_ABORTABLE, which Kafka answers from v11 on
    with pytest.raises(KafkaError) as info:
        check(ongoing(TP), tp=OTHER, version=11)
    assert info.value.code is ErrorCode.transaction_abortable


def test_produce_after_the_transaction_ended_is_invalid_txn_state():
    with pytest.raises(KafkaError) as info:
        check(ongoing())  # Empty: nothing added
    assert info.value.code is ErrorCode.invalid_txn_state


def test_partition_with_an_open_transaction_needs_no_check():
    check(ongoing(), open_here=True)


def test_non_transactional_and_stale_producers_are_left_to_the_log():
    check(ongoing(), txn=False)
    check(ongoing(), epoch=7)
    check(ongoing(), pid=99)
    check(Coordinator(None))


def test_transactional_batch_without_transactional_id_is_invalid_request():
    with pytest.raises(KafkaError) as info:
        check(ongoing(TP), txn_id=None)
    assert info.value.code is ErrorCode.invalid_request


@pytest.mark.parametrize(("raised", "told"), [
    (ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch),  # as Kafka's brokers tell Produce
    (ErrorCode.not_coordinator, ErrorCode.not_enough_replicas),  # retriable, no metadata refresh
    (ErrorCode.network_exception, ErrorCode.not_enough_replicas),
    (ErrorCode.concurrent_transactions, ErrorCode.concurrent_transactions),  # v12 clients retry it as is
])
async def test_implicit_add_errors_as_produce_tells_them(raised, told):
    async def add(txn_id, pid, epoch, partitions):
        raise KafkaError(raised, "no")

    refused = await add_partitions_for_produce(ongoing(), "tx", [(OTHER, header(pid=5, epoch=0, txn=True))], add)
    assert {tp: e.code for tp, e in refused.items()} == {OTHER: told}


async def test_implicit_add_skips_partitions_already_in_the_transaction():
    async def add(txn_id, pid, epoch, partitions):
        raise AssertionError("not needed")

    assert await add_partitions_for_produce(ongoing(TP), "tx", [(TP, header(pid=5, epoch=0, txn=True))], add) == {}
