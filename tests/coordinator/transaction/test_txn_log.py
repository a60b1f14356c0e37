import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.transaction.log import (
    TxnLogEntry,
    decode_record,
    partition_for,
    producer_id_block_key,
    producer_id_block_value,
    transaction_key,
    transaction_value,
)
from coordinator.transaction.metadata import TxnTransition
from coordinator.transaction.producer_id_manager import ProducerIdBlock
from coordinator.transaction.state import TxnState
from protocol.errors import CorruptRecordError
from storage.api import TopicPartition


def transition(state=TxnState.ONGOING, partitions=(("a", 0), ("a", 2), ("b", 1)), **kw):
    values = dict(
        state=state, producer_id=4000, last_producer_id=-1, producer_epoch=7,
        last_producer_epoch=-1, txn_timeout_ms=60000,
        topic_partitions=frozenset(TopicPartition(*p) for p in partitions),
        txn_start_timestamp=1000, txn_last_update_timestamp=2000,
    )
    values.update(kw)
    return TxnTransition(**values)


def test_a_transactional_id_takes_kafkas_partition() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert partition_for("hello", 50) == 99162322 % 50


def test_key_layout():
    assert transaction_key("tx") == b"\x00\x00\x00\x02tx"


def test_value_layout_v0():
    value = transaction_value(transition(partitions=(("a", 1),)))
    assert value == (
        struct.pack(">hqhib", 0, 4000, 7, 60000, 1)
        + struct.pack(">i", 1) + b"\x00\x01a" + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 2000, 1000)
    )


def test_empty_state_writes_null_partitions():
    value = transaction_value(transition(TxnState.EMPTY, partitions=()))
    assert value[struct.calcsize(">hqhib"):][:4] == b"\xff\xff\xff\xff"
    entry = decode_record(transaction_key("tx"), value)
    assert entry.transition.topic_partitions == frozenset()


def test_empty_with_partitions_is_refused():
    with pytest.raises(ValueError):
        transaction_value(transition(TxnState.EMPTY))


@given(
    state=st.sampled_from([s for s in TxnState if s not in (TxnState.DEAD, TxnState.EMPTY)]),
    partitions=st.sets(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 2**31 - 1))),
    pid=st.integers(0, 2**63 - 1),
    epoch=st.integers(-1, 2**15 - 1),
    txn_id=st.text(max_size=20),
)
def test_round_trip(state, partitions, pid, epoch, txn_id):
    t = transition(state, partitions, producer_id=pid, producer_epoch=epoch)
    entry = decode_record(transaction_key(txn_id), transaction_value(t))
    assert entry == TxnLogEntry(transactional_id=txn_id, transition=t)


def test_dead_is_a_tombstone():
    assert transaction_value(transition(TxnState.DEAD, partitions=())) is None
    assert decode_record(transaction_key("tx"), None) == TxnLogEntry(
        transactional_id="tx", transition=None
    )


def test_producer_id_block_record():
    block = ProducerIdBlock(first_producer_id=5000, size=1000)
    assert decode_record(producer_id_block_key(), producer_id_block_value(block)) == block


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b""),
        (b"\x00\x09\x00\x00", None),  # unknown key version
        (b"\x00\x00\x00\x05ab", None),  # string overruns
        (transaction_key("t"), b"\x00\x02" + bytes(40)),  # unknown value version
        (transaction_key("t"), transaction_value(transition())[:-1]),
        (transaction_key("t"), b"\x00\x00" + bytes(14) + b"\x09" + bytes(20)),  # bad state
        (producer_id_block_key(), None),
    ],
)
def test_corrupt_records(key, value):
    with pytest.raises(CorruptRecordError):
        decode_record(key, value)


@given(st.binary(max_size=40), st.binary(max_size=60))
def test_garbage_is_corrupt_not_struct_error(key, value):
    try:
        decode_record(key, value)
    except CorruptRecordError:
        pass


def test_value_layout_v1_is_kafkas_flexible_form_with_tagged_fields():
    # TransactionLogValue v1: compact arrays and strings, then tag 2 ClientTransactionVersion
    value = transaction_value(transition(partitions=(("a", 1),), client_transaction_version=2), version=1)
    assert value == (
        struct.pack(">hqhib", 1, 4000, 7, 60000, 1)
        + b"\x02" + b"\x02a" + b"\x02" + struct.pack(">i", 1) + b"\x00"
        + struct.pack(">qq", 2000, 1000)
        + b"\x01" + b"\x02\x02" + struct.pack(">h", 2)
    )
    # defaults are left out; an Empty state's partitions are null (0)
    empty = transaction_value(transition(TxnState.EMPTY, partitions=()), version=1)
    assert empty == struct.pack(">hqhib", 1, 4000, 7, 60000, 0) + b"\x00" + struct.pack(">qq", 2000, 1000) + b"\x00"


@given(
    state=st.sampled_from([s for s in TxnState if s not in (TxnState.DEAD, TxnState.EMPTY)]),
    partitions=st.sets(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 2**31 - 1)), max_size=4),
    last_pid=st.integers(-1, 2**63 - 1),
    next_pid=st.integers(-1, 2**63 - 1),
    client_tv=st.integers(0, 2),
)
def test_round_trip_v1(state, partitions, last_pid, next_pid, client_tv):
    t = transition(state, partitions, last_producer_id=last_pid, next_producer_id=next_pid,
                   client_transaction_version=client_tv)
    entry = decode_record(transaction_key("tx"), transaction_value(t, version=1))
    assert entry == TxnLogEntry(transactional_id="tx", transition=t)


def test_v1_tags_unknown_to_us_are_skipped_and_trailing_bytes_refused():
    value = transaction_value(transition(partitions=()), version=1)
    with_unknown_tag = value[:-1] + b"\x01" + b"\x09\x03abc"  # tag 9, 3 bytes
    assert decode_record(transaction_key("tx"), with_unknown_tag).transition == transition(partitions=())
    with pytest.raises(CorruptRecordError):
        decode_record(transaction_key("tx"), value + b"\x00")
