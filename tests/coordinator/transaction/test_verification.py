import asyncio

import pytest

from coordinator.transaction.metadata import TransactionMetadata
from coordinator.transaction.verification import (
    AddRetry,
    add_offsets_for_txn_offset_commit,
    add_partitions_for_produce,
    verify_remotely,
    verify_transactional_produce,
    verify_txn_offset_commit,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import RecordBatchHeader
from protocol.records import Record, build_batch
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
    assert info.value.message.startswith("Partition was not added to the transaction: t-1 is not in the "
                                         "transaction of 'tx'")


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


def test_non_transactional_batches_and_unknown_ids_are_left_to_the_log():
    check(ongoing(), txn=False)
    check(Coordinator(None))  # cluster mode: another broker coordinates it


@pytest.mark.parametrize(("change", "code"), [
    ({"epoch": 7}, ErrorCode.invalid_producer_epoch),
    ({"pid": 99}, ErrorCode.invalid_producer_id_mapping),
])
def test_a_stale_producer_cannot_open_a_transaction_on_a_partition_that_never_saw_it(change, code):
    # Kafka's verification checks the producer against the coordinator: the partition has no
    # state for it to check, and the batch would open a transaction no marker closes
    with pytest.raises(KafkaError) as info:
        check(ongoing(TP), **change)
    assert info.value.code is code


def test_a_batch_while_the_markers_are_written_is_retriable():
    c = ongoing(TP)
    c.md.complete_transition(c.md.prepare_end_txn(producer_id=5, producer_epoch=0, commit=True, now_ms=2))
    with pytest.raises(KafkaError) as info:
        check(c, tp=OTHER, version=11)
    assert info.value.code is ErrorCode.not_enough_replicas  # as Kafka passes CONCURRENT_TRANSACTIONS to v11


class GroupCoordinatorView(Coordinator):
    def offsets_partition(self, group_id):
        return TopicPartition("__consumer_offsets", 3)


@pytest.mark.parametrize(("version", "code"), [(3, ErrorCode.invalid_txn_state), (4, ErrorCode.transaction_abortable)])
def test_txn_offset_commit_without_add_offsets_is_refused(version, code):
    c = GroupCoordinatorView(ongoing(TP).md)
    with pytest.raises(KafkaError) as info:
        verify_txn_offset_commit(c, "tx", 5, 0, "g", version)
    assert info.value.code is code and "AddOffsetsToTxn" in info.value.message
    added = ongoing(TP, TopicPartition("__consumer_offsets", 3))
    verify_txn_offset_commit(GroupCoordinatorView(added.md), "tx", 5, 0, "g", version)
    verify_txn_offset_commit(GroupCoordinatorView(None), "tx", 5, 0, "g", version)


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


async def test_implicit_add_skips_partitions_whose_log_holds_the_transaction_and_adds_the_others():
    # Kafka's UnifiedLog.hasOngoingTransaction: no word with the coordinator for those
    added = []

    async def add(txn_id, pid, epoch, partitions):
        added.append(partitions)

    refused = await add_partitions_for_produce(ongoing(), "tx", [(TP, header(pid=5, epoch=0, txn=True)),
                                                                 (OTHER, header(pid=5, epoch=0, txn=True))],
                                               add, open_in_log=lambda tp, h: tp == TP)
    assert refused == {} and added == [[OTHER]]


async def test_a_partition_whose_log_holds_the_transaction_still_counts_in_the_one_producer_check():
    async def add(txn_id, pid, epoch, partitions):
        raise AssertionError("refused before any add")

    refused = await add_partitions_for_produce(ongoing(), "tx", [(TP, header(pid=5, epoch=0, txn=True)),
                                                                 (OTHER, header(pid=6, epoch=0, txn=True))],
                                               add, open_in_log=lambda tp, h: True)
    assert {tp: e.code for tp, e in refused.items()} == {TP: ErrorCode.invalid_producer_id_mapping,
                                                          OTHER: ErrorCode.invalid_producer_id_mapping}


def test_another_add_being_persisted_does_not_stop_a_batch_to_an_added_partition():
    c = ongoing(TP)
    c.md.mark_pending(c.md.prepare_add_partitions(producer_id=5, producer_epoch=0, partitions=[OTHER], now_ms=2))
    check(c, version=11)


def test_txn_offset_commit_while_the_markers_are_written_is_retried_as_kafka_answers_it():
    c = GroupCoordinatorView(ongoing(TP, TopicPartition("__consumer_offsets", 3)).md)
    c.md.complete_transition(c.md.prepare_end_txn(producer_id=5, producer_epoch=0, commit=True, now_ms=2))
    with pytest.raises(KafkaError) as info:
        verify_txn_offset_commit(c, "tx", 5, 0, "g", 3)
    assert info.value.code is ErrorCode.coordinator_not_available


@pytest.mark.parametrize(("max_ms", "calls", "told"), [
    (100, 3, {}), (30, 2, {OTHER: ErrorCode.concurrent_transactions})])
async def test_a_v2_add_that_finds_the_markers_still_written_is_retried_on_the_broker(max_ms, calls, told):
    # Kafka's add.partitions.to.txn.retry.backoff(.max).ms: the next transaction's first batch
    # usually arrives while the last one's markers are still being written
    made = []

    async def add(txn_id, pid, epoch, partitions):
        made.append(partitions)
        if len(made) < 3:
            raise KafkaError(ErrorCode.concurrent_transactions, "markers")

    refused = await add_partitions_for_produce(ongoing(), "tx", [(OTHER, header(pid=5, epoch=0, txn=True))], add,
                                               AddRetry(backoff_ms=20, max_ms=max_ms))
    assert {tp: e.code for tp, e in refused.items()} == told and len(made) == calls


class Log:
    def __init__(self, open_for=()):
        self.open_for = set(open_for)

    def has_open_transaction(self, producer_id):
        return producer_id in self.open_for


def batch_header(pid=5, epoch=0):
    return RecordBatchHeader.parse(build_batch([Record(value=b"x")], producer_id=pid, producer_epoch=epoch,
                                               base_sequence=0, transactional=True))


@pytest.mark.parametrize(("answer", "version", "told"), [
    (ErrorCode.none, 11, None),
    (ErrorCode.transaction_abortable, 11, ErrorCode.transaction_abortable),
    (ErrorCode.transaction_abortable, 10, ErrorCode.invalid_txn_state),  # before v11, as Kafka maps it
    (ErrorCode.producer_fenced, 11, ErrorCode.invalid_producer_epoch),
    (ErrorCode.concurrent_transactions, 11, ErrorCode.not_enough_replicas),
    (ErrorCode.not_coordinator, 11, ErrorCode.not_enough_replicas),
])
async def test_a_v1_batch_is_verified_with_a_coordinator_on_another_broker(answer, version, told):
    asked = []

    async def verify(txn_id, pid, epoch, partitions):
        asked.append((txn_id, pid, epoch, partitions))
        return {tp: answer for tp in partitions}

    if told is None:
        await verify_remotely(verify, "tx", TP, Log(), batch_header(), version)
    else:
        with pytest.raises(KafkaError) as info:
            await verify_remotely(verify, "tx", TP, Log(), batch_header(), version)
        assert info.value.code is told
    assert asked == [("tx", 5, 0, [TP])]
    await verify_remotely(verify, "tx", TP, Log(open_for={5}), batch_header(), version)  # already open: no ask
    assert len(asked) == 1


@pytest.mark.parametrize(("version", "answer", "told"), [
    (5, ErrorCode.none, None),
    (5, ErrorCode.not_coordinator, ErrorCode.coordinator_not_available),  # as Kafka's group coordinator
    (5, ErrorCode.concurrent_transactions, ErrorCode.concurrent_transactions),
    (4, ErrorCode.transaction_abortable, ErrorCode.transaction_abortable),
    (3, ErrorCode.transaction_abortable, ErrorCode.invalid_txn_state),
    (4, ErrorCode.none, None),
])
async def test_txn_offset_commit_reaches_a_transaction_coordinator_on_another_broker(version, answer, told):
    asked = []
    offsets = TopicPartition("__consumer_offsets", 3)

    async def add(txn_id, pid, epoch, partitions):
        asked.append(("add", partitions))
        if answer is not ErrorCode.none:
            raise KafkaError(answer, "remote")

    async def verify(txn_id, pid, epoch, partitions):
        asked.append(("verify", partitions))
        return dict.fromkeys(partitions, answer)

    call = add_offsets_for_txn_offset_commit(GroupCoordinatorView(None), add, verify, "tx", 5, 0, "g", version)
    if told is None:
        await call
    else:
        with pytest.raises(KafkaError) as info:
            await call
        assert info.value.code is told
    assert asked == [("add" if version >= 5 else "verify", [offsets])]


async def test_a_v2_add_is_tried_again_once_the_markers_are_written_not_after_the_whole_backoff():
    # the local coordinator tells when the last transaction's markers are written: the retry
    # goes then (here after 10 ms), not after the 10 s backoff
    loop = asyncio.get_running_loop()
    written = loop.create_future()
    loop.call_later(0.01, written.set_result, None)
    tries = []

    async def add(txn_id, pid, epoch, partitions):
        tries.append(loop.time())
        if not written.done():
            raise KafkaError(ErrorCode.concurrent_transactions, "markers")

    async def markers_written(txn_id, timeout_s):
        assert (txn_id, timeout_s) == ("tx", 10.0)
        await asyncio.wait({written}, timeout=timeout_s)

    refused = await asyncio.wait_for(add_partitions_for_produce(
        ongoing(), "tx", [(OTHER, header(pid=5, epoch=0, txn=True))], add,
        AddRetry(backoff_ms=10_000, max_ms=30_000, wait=markers_written)), timeout=5)
    assert refused == {} and len(tries) == 2
