"""The Transactions V2 request versions in process (issue 14): Produce v12-13 adds the partition
implicitly, EndTxn v5 answers the bumped epoch, and the errors each version gets, with the V1
versions unchanged beside them."""

from __future__ import annotations

import pytest

from broker.dispatch import HANDLERS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker.test_txn_handlers import add, call, init, txn_state

E = ErrorCode


@pytest.fixture
async def state(tmp_path):  # type: ignore[no-untyped-def]
    async with txn_state(tmp_path) as s:
        yield s


def batch(pid: int, epoch: int, seq: int = 0) -> bytes:
    return bytes(build_batch([Record(value=b"x")], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                             transactional=True))


async def produce(state, pid, epoch, seq=0, partition=0, version=12, txn_id="tx"):  # type: ignore[no-untyped-def]
    topic = {"name": "t"} if version < 13 else {"topic_id": state.logs.topics["t"].topic_id}
    r = await call(state, ApiKey.PRODUCE, version, transactional_id=txn_id, acks=-1, timeout=1000,
                   topic_data=[topic | {"partition_data": [{"index": partition, "records": batch(pid, epoch, seq)}]}])
    [part] = r.responses[0].partition_responses
    return part.error_code


async def end_v5(state, pid, epoch, commit=True):  # type: ignore[no-untyped-def]
    r = await call(state, ApiKey.END_TXN, 5, transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                   committed=commit)
    return r.error_code, r.producer_id, r.producer_epoch


async def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(state):  # type: ignore[no-untyped-def]
    r = await init(state, version=5)
    pid = r.producer_id
    assert await produce(state, pid, 0, partition=0) is E.none
    assert await produce(state, pid, 0, seq=0, partition=1, version=13) is E.none
    md = state.txn_coordinator.describe("tx")
    assert md.topic_partitions == {("t", 0), ("t", 1)} and md.client_transaction_version == 2
    assert await end_v5(state, pid, 0) == (E.none, pid, 1)
    await state.txn_coordinator.quiesce()
    # the zombie epoch is refused by the coordinator, told as Produce knows it
    assert await produce(state, pid, 0, seq=1) is E.invalid_producer_epoch
    assert await produce(state, pid, 1) is E.none
    assert await end_v5(state, pid, 1, commit=False) == (E.none, pid, 2)
    await state.txn_coordinator.quiesce()  # until the markers are written any EndTxn v5 must wait
    assert await end_v5(state, pid, 0) == (E.producer_fenced, -1, -1)


async def test_empty_abort_under_v5_and_not_under_v4(state):  # type: ignore[no-untyped-def]
    r = await init(state)
    v4 = await call(state, ApiKey.END_TXN, 4, transactional_id="tx", producer_id=r.producer_id, producer_epoch=0,
                    committed=False)
    assert v4.error_code is E.invalid_txn_state
    assert await end_v5(state, r.producer_id, 0, commit=False) == (E.none, r.producer_id, 1)


async def test_produce_v13_with_an_unknown_topic_id(state):  # type: ignore[no-untyped-def]
    import uuid

    r = await call(state, ApiKey.PRODUCE, 13, transactional_id=None, acks=-1, timeout=1000, topic_data=[
        {"topic_id": uuid.uuid4(), "partition_data": [{"index": 0, "records": batch(1, 0)}]}])
    assert r.responses[0].partition_responses[0].error_code is E.unknown_topic_id


async def test_produce_v11_not_added_is_transaction_abortable_and_v12_adds_instead(state):  # type: ignore[no-untyped-def]
    r = await init(state)
    await add(state, r.producer_id, 0, {"t": [0]})
    assert await produce(state, r.producer_id, 0, partition=1, version=11) is E.transaction_abortable
    assert await produce(state, r.producer_id, 0, partition=1, version=12) is E.none


def test_init_producer_id_is_advertised_as_kafka_4_4_advertises_it() -> None:
    # Kafka 4.4's InitProducerId v6 (KIP-939) is unstable: a stock broker answers ApiVersions with 0-5.
    handler = HANDLERS[ApiKey.INIT_PRODUCER_ID]
    assert (handler.min_version, handler.max_version) == (0, 5)
    assert not handler.parses(6)


async def add_v5(state, pid, epoch, partitions, verify_only):  # type: ignore[no-untyped-def]
    r = await call(state, ApiKey.ADD_PARTITIONS_TO_TXN, 5, transactions=[{
        "transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch, "verify_only": verify_only,
        "topics": [{"name": "t", "partitions": partitions}]}])
    assert r.error_code is E.none
    return {p.partition_index: p.partition_error_code
            for t in r.results_by_transaction[0].topic_results for p in t.results_by_partition}


async def test_add_partitions_v5_from_another_broker_adds_or_verifies(state):  # type: ignore[no-untyped-def]
    r = await init(state)
    pid = r.producer_id
    assert await add_v5(state, pid, 0, [0], verify_only=True) == {0: E.transaction_abortable}
    assert await add_v5(state, pid, 0, [0], verify_only=False) == {0: E.none}  # as a V2 Produce adds it
    assert state.txn_coordinator.describe("tx").client_transaction_version == 2
    assert await add_v5(state, pid, 0, [0, 1], verify_only=True) == {0: E.none, 1: E.transaction_abortable}
    assert await add_v5(state, pid, 1, [1], verify_only=False) == {1: E.producer_fenced}
    assert await add_v5(state, pid, 1, [0], verify_only=True) == {0: E.producer_fenced}


async def test_a_v2_producer_new_to_a_partition_starts_at_sequence_0(state):  # type: ignore[no-untyped-def]
    r = await init(state)
    assert await produce(state, r.producer_id, 0, seq=5, partition=0) is E.out_of_order_sequence_number
    assert state.logs.get_log(("t", 0)).log_end_offset == 0
    assert await produce(state, r.producer_id, 0, seq=0, partition=0) is E.none
    assert await produce(state, r.producer_id, 0, seq=1, partition=0) is E.none
    # V1 keeps Kafka's older rule: a producer with no state there may start anywhere
    await add(state, r.producer_id, 0, {"t": [1]})
    assert await produce(state, r.producer_id, 0, seq=5, partition=1, version=11) is E.none
