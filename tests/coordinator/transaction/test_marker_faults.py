"""Faults injected at the storage seam while transactions commit (issue 9).

A control marker that cannot be written is retried until it is durable; COMPLETE_COMMIT /
COMPLETE_ABORT is persisted only after every marker; meanwhile the transactional id answers
CONCURRENT_TRANSACTIONS and the partition's LSO stays at the transaction's first offset; once
the fault clears the LSO advances, and nothing acknowledged is lost across a restart.
"""

import asyncio

import pytest

from coordinator.tasks import Backoff
from coordinator.transaction.coordinator import TxnCoordinatorConfig
from coordinator.transaction.log import TRANSACTION_STATE_TOPIC, TxnLogEntry, decode_record, partition_for
from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode, KafkaError
from protocol.records import read_records
from storage.api import IsolationLevel, LogSource, PartitionLog, TopicPartition
from storage.log_manager import LogManager

from . import test_txn_coordinator as txn_broker
from .faulty_storage import FaultyLog, FaultyLogs

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
CONFIG = TxnCoordinatorConfig(num_partitions=3, producer_id_block_size=10,
                              abort_timed_out_interval_ms=3_600_000,
                              retry_backoff=Backoff(initial_ms=1, max_ms=20))
STATE_TP = TopicPartition(TRANSACTION_STATE_TOPIC, partition_for("tx", CONFIG.num_partitions))
ERRORS = {
    "storage-error": lambda: KafkaError(ErrorCode.kafka_storage_error, "No space left on device"),
    "os-error": lambda: OSError(28, "No space left on device"),
    "closing": lambda: KafkaError(ErrorCode.not_leader_or_follower, "orders-0 is closing"),
}


class Broker(txn_broker.Broker):
    def __init__(self, path):
        super().__init__(path, CONFIG)

    def log_source(self):
        self.faults = FaultyLogs(self.logs)
        return self.faults

    async def committed_values(self, tp):
        plog = self.logs.get_log(tp)
        info = await plog.read(0, 1 << 20, IsolationLevel.READ_COMMITTED)
        aborted = {a.producer_id for a in info.aborted_transactions or []}
        return [r.value for d in info.records for h, recs in read_records(b"".join([d]))
                if not h.is_control and h.producer_id not in aborted for r in recs]

    async def persisted_states(self):
        """The states of 'tx' in __transaction_state, in the order they were written."""
        info = await self.logs.get_log(STATE_TP).read(0, 1 << 20)
        entries = [decode_record(r.key, r.value) for d in info.records for _, recs in read_records(d)
                   for r in recs]
        return [e.transition.state for e in entries
                if isinstance(e, TxnLogEntry) and e.transactional_id == "tx" and e.transition]


@pytest.fixture
async def broker(tmp_path):
    b = await Broker(tmp_path).start()
    yield b
    await b.stop()


async def open_transaction(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0, T1])
    await broker.produce(T0, p.producer_id, p.epoch, 0, b"t0")
    await broker.produce(T1, p.producer_id, p.epoch, 0, b"t1")
    return p


async def until_failures(broker, fault, count):
    """Wait for count failed appends, or for the coordinator to give up and finish (a bug the
    assertions that follow then report, instead of a hang)."""
    waits = [asyncio.ensure_future(fault.wait_failures(count)),
             asyncio.ensure_future(broker.coordinator.quiesce())]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for w in waits:
        w.cancel()
    await asyncio.gather(*waits, return_exceptions=True)


async def expect_concurrent(coro):
    with pytest.raises(KafkaError) as info:
        await coro
    assert info.value.code is ErrorCode.concurrent_transactions


async def test_the_wrappers_implement_the_storage_seam(tmp_path):
    logs = LogManager(tmp_path, {})
    faults = FaultyLogs(logs)
    assert isinstance(logs, LogSource) and isinstance(faults, LogSource)
    await logs.create_topic("orders", 1)
    assert isinstance(logs.get_log(T0), PartitionLog)
    assert isinstance(faults.break_partition(T0, ERRORS["os-error"]), PartitionLog)


@pytest.mark.parametrize("error", ERRORS)
async def test_marker_is_retried_until_written_and_only_then_completed(broker, error):
    c = broker.coordinator
    p = await open_transaction(broker)
    acked = broker.logs.get_log(T0).high_watermark
    fault = broker.faults.break_partition(T0, ERRORS[error])
    await c.end_txn("tx", p.producer_id, p.epoch, commit=True)
    await until_failures(broker, fault, 6)  # more than the five attempts after which markers were dropped
    assert c.describe("tx").state is TxnState.PREPARE_COMMIT
    assert await broker.persisted_states() == [TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT]
    assert broker.logs.get_log(T0).last_stable_offset == 0  # pinned on the open transaction
    await expect_concurrent(c.add_partitions("tx", p.producer_id, p.epoch, [T0]))
    await expect_concurrent(c.init_producer_id("tx", 60000))
    fault.heal()
    await c.quiesce()
    assert c.describe("tx").state is TxnState.COMPLETE_COMMIT
    assert (await broker.persisted_states())[-2:] == [TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT]
    plog = broker.logs.get_log(T0)
    assert plog.last_stable_offset == plog.high_watermark == acked + 1  # the marker, once
    assert await broker.committed_values(T0) == [b"t0"]
    assert await broker.committed_values(T1) == [b"t1"]


async def test_failed_completion_is_retried_after_the_markers(broker, caplog):
    c = broker.coordinator
    p = await open_transaction(broker)
    data_fault = broker.faults.break_partition(T0, ERRORS["storage-error"])
    await c.end_txn("tx", p.producer_id, p.epoch, commit=False)
    await until_failures(broker, data_fault, 1)
    state_fault: FaultyLog = broker.faults.break_partition(STATE_TP, ERRORS["os-error"])
    data_fault.heal()
    await until_failures(broker, state_fault, 3)  # COMPLETE_ABORT cannot be persisted: tried again
    assert c.describe("tx").state is TxnState.PREPARE_ABORT
    # one line with its cause (a retriable storage error: no traceback, as in cluster mode)
    assert any("failed" in r.message and "No space left on device" in r.message for r in caplog.records)
    state_fault.heal()
    await c.quiesce()
    assert c.describe("tx").state is TxnState.COMPLETE_ABORT
    assert await broker.committed_values(T0) == [] == await broker.committed_values(T1)
    assert broker.logs.get_log(T0).last_stable_offset == broker.logs.get_log(T0).high_watermark


async def test_nothing_acknowledged_is_lost_across_a_restart(tmp_path):
    b = await Broker(tmp_path).start()
    p = await open_transaction(b)
    await b.produce(T0, -1, -1, -1, b"plain", txn=False)
    fault = b.faults.break_partition(T1, ERRORS["closing"])
    await b.coordinator.end_txn("tx", p.producer_id, p.epoch, commit=True)
    await until_failures(b, fault, 2)
    fault.heal()
    await b.coordinator.quiesce()
    await b.stop()
    b = await Broker(tmp_path).start()
    try:
        assert b.coordinator.describe("tx").state is TxnState.COMPLETE_COMMIT
        assert await b.committed_values(T0) == [b"t0", b"plain"]
        assert await b.committed_values(T1) == [b"t1"]
        fresh = await b.coordinator.init_producer_id("tx", 60000)
        assert fresh.epoch == p.epoch + 1
    finally:
        await b.stop()


async def test_marker_for_a_deleted_topic_is_dropped(broker):
    c = broker.coordinator
    p = await open_transaction(broker)
    fault = broker.faults.break_partition(T1, ERRORS["storage-error"])
    await c.end_txn("tx", p.producer_id, p.epoch, commit=True)
    await until_failures(broker, fault, 1)
    await broker.faults.delete_topic("orders")
    await c.quiesce()
    assert c.describe("tx").state is TxnState.COMPLETE_COMMIT
