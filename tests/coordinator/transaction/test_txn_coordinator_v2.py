"""The transaction coordinator actor under Transactions V2, over real partition logs: markers carry
the bumped epoch and the partition's producer state follows it, the empty abort needs no marker,
the implicit add, restarts with the V2 fields, and the fence abort under transaction.version 2."""

import asyncio

import pytest

from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.transaction.test_txn_coordinator import T0, T1, Broker, expect


class V2Broker(Broker):
    level = 2


@pytest.fixture
async def broker(tmp_path):
    b = await V2Broker(tmp_path).start()
    yield b
    await b.stop()


async def test_markers_carry_the_bumped_epoch_and_the_next_transaction_starts_at_sequence_0(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0, T1], tv2=True)
    await broker.produce(T0, p.producer_id, p.epoch, 0)
    await broker.produce(T0, p.producer_id, p.epoch, 1)
    after = await c.end_txn("tx", p.producer_id, p.epoch, commit=True, tv2=True)
    assert (after.producer_id, after.epoch) == (p.producer_id, 1)
    await c.quiesce()
    assert await broker.control_batches(T0) == [(p.producer_id, 1)]
    assert await broker.control_batches(T1) == [(p.producer_id, 1)]
    assert broker.logs.get_log(T0).last_stable_offset == 3
    # the old epoch is fenced on the partition; the new one begins at sequence 0, not 2
    with pytest.raises(KafkaError) as info:
        await broker.produce(T0, p.producer_id, 0, 2)
    assert info.value.code is ErrorCode.invalid_producer_epoch
    await c.add_partitions("tx", p.producer_id, 1, [T0], tv2=True)
    with pytest.raises(KafkaError) as info:
        await broker.produce(T0, p.producer_id, 1, 2)
    assert info.value.code is ErrorCode.out_of_order_sequence_number
    await broker.produce(T0, p.producer_id, 1, 0)
    again = await c.end_txn("tx", p.producer_id, 1, commit=False, tv2=True)
    assert again.epoch == 2


async def test_empty_abort_completes_at_once_without_markers(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    after = await c.end_txn("tx", p.producer_id, p.epoch, commit=False, tv2=True)
    assert after.epoch == p.epoch + 1
    md = c.describe("tx")
    assert (md.state, md.producer_epoch, md.pending_state) == (TxnState.COMPLETE_ABORT, 1, None)
    assert await broker.control_batches(T0) == []
    # a V1 EndTxn repeating the abort at the current epoch is a retry, as a Kafka 4.4 node answers it;
    # a V1 commit is refused, an older epoch fenced (the same three requests to Kafka 4.4 agree)
    assert (await c.end_txn("tx", p.producer_id, 1, commit=False)).epoch == 1
    await expect(ErrorCode.invalid_txn_state, c.end_txn("tx", p.producer_id, 1, commit=True))
    await expect(ErrorCode.producer_fenced, c.end_txn("tx", p.producer_id, 0, commit=False))


async def test_v2_fields_survive_a_restart(tmp_path):
    b = await V2Broker(tmp_path).start()
    p = await b.coordinator.init_producer_id("tx", 60000)
    await b.coordinator.add_partitions("tx", p.producer_id, p.epoch, [T0], tv2=True)
    await b.coordinator.end_txn("tx", p.producer_id, p.epoch, commit=True, tv2=True)
    await b.coordinator.quiesce()
    await b.stop()
    b = await V2Broker(tmp_path).start()
    try:
        md = b.coordinator.describe("tx")
        assert (md.state, md.producer_epoch, md.client_transaction_version) == (TxnState.COMPLETE_COMMIT, 1, 2)
        # so a retry of the EndTxn with the previous epoch is still recognised after the restart
        retry = await b.coordinator.end_txn("tx", p.producer_id, 0, commit=True, tv2=True)
        assert retry.epoch == 1
    finally:
        await b.stop()


async def test_implicit_add_errors(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    await expect(ErrorCode.producer_fenced, c.add_partitions("tx", p.producer_id, p.epoch + 1, [T0], tv2=True))
    await expect(ErrorCode.invalid_producer_id_mapping, c.add_partitions("tx", p.producer_id + 1, 0, [T0], tv2=True))
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0], tv2=True)
    await broker.produce(T0, p.producer_id, p.epoch, 0)
    await c.end_txn("tx", p.producer_id, p.epoch, commit=True, tv2=True)
    await c.quiesce()
    await c.add_partitions("tx", p.producer_id, 1, [T1], tv2=True)
    assert c.describe("tx").topic_partitions == {T1}


async def test_fencing_under_level_2_aborts_with_epoch_plus_1(broker):
    # Kafka 4.4 (KAFKA-19367): one bump for the fence and its abort, one more for the new producer
    c = broker.coordinator
    zombie = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", zombie.producer_id, zombie.epoch, [T0], tv2=True)
    await broker.produce(T0, zombie.producer_id, zombie.epoch, 0)
    await expect(ErrorCode.concurrent_transactions, c.init_producer_id("tx", 60000))
    await c.quiesce()
    assert await broker.control_batches(T0) == [(zombie.producer_id, 1)]
    fresh = await c.init_producer_id("tx", 60000)
    assert fresh.epoch == 2
    await expect(ErrorCode.producer_fenced, c.end_txn("tx", zombie.producer_id, zombie.epoch, True, tv2=True))


async def test_markers_done_waits_for_the_markers_under_way_and_for_nothing_else(broker):
    # what AddPartitionsToTxn (v0-3) waits for before deciding, rather than answer CONCURRENT_TRANSACTIONS
    c = broker.coordinator
    await asyncio.wait_for(c.markers_done("tx", 3600.0), timeout=5)  # an id it does not know: at once
    p = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0])
    await broker.produce(T0, p.producer_id, p.epoch, 0)
    await c.end_txn("tx", p.producer_id, p.epoch, commit=True)
    assert c.describe("tx").state is TxnState.PREPARE_COMMIT  # the markers are being written
    await asyncio.wait_for(c.markers_done("tx", 3600.0), timeout=5)
    assert c.describe("tx").state is TxnState.COMPLETE_COMMIT
    await asyncio.wait_for(c.markers_done("tx", 3600.0), timeout=5)  # none under way: at once
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0])
    assert c.describe("tx").state is TxnState.ONGOING


async def test_markers_written_returns_once_they_are_and_the_next_add_succeeds(broker):
    # what a V2 Produce that met CONCURRENT_TRANSACTIONS waits for before its next try
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0], tv2=True)
    after = await c.end_txn("tx", p.producer_id, p.epoch, commit=True, tv2=True)
    assert c.describe("tx").state is TxnState.PREPARE_COMMIT  # the markers are being written
    await asyncio.wait_for(c.markers_written("tx", 30.0), timeout=5)
    assert c.describe("tx").state is TxnState.COMPLETE_COMMIT
    await c.add_partitions("tx", p.producer_id, after.epoch, [T0], tv2=True)
    # with nothing being written for the id, it waits the whole timeout
    loop = asyncio.get_running_loop()
    started = loop.time()
    await c.markers_written("tx", 0.05)
    assert loop.time() - started >= 0.05
