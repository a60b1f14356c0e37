"""The transaction coordinator actor over real partition logs in a temporary directory."""

import pytest

from coordinator.transaction.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from coordinator.transaction.log import TRANSACTION_STATE_TOPIC, producer_id_block_key, producer_id_block_value
from coordinator.transaction.metadata import ProducerIdAndEpoch
from coordinator.transaction.producer_id_manager import ProducerIdBlock
from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from protocol.records import Record, build_batch
from storage.api import IsolationLevel, TopicPartition
from storage.log_manager import LogManager
from storage.producer_id_blocks import LocalProducerIdBlocks

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
CONFIG = TxnCoordinatorConfig(num_partitions=3, offsets_num_partitions=5, producer_id_block_size=10,
                              abort_timed_out_interval_ms=3_600_000)


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self):
        return self.ms


class Group:
    """Stands in for the group coordinator's side of a transaction."""

    def __init__(self):
        self.completed = []

    async def complete_txn(self, producer_id, group_ids, commit):
        self.completed.append((producer_id, group_ids, commit))


class Broker:
    level = 0  # the finalized transaction.version

    def __init__(self, path, config=CONFIG):
        self.path, self.config = path, config
        self.clock, self.group = Clock(), Group()

    async def start(self):
        self.logs = LogManager(self.path, {})
        self.logs.load()
        self.logs.start()
        if "orders" not in self.logs.topics:
            await self.logs.create_topic("orders", 2)
        self.coordinator = TransactionCoordinator(self.log_source(), self.config, lambda: self.group,
                                                  self.clock, transaction_version=lambda: self.level,
                                                  producer_id_blocks=LocalProducerIdBlocks(self.path))
        await self.coordinator.start()
        return self

    def log_source(self):
        return self.logs

    async def stop(self):
        await self.coordinator.stop()
        await self.logs.close()

    async def produce(self, tp, pid, epoch, seq, value=b"x", txn=True):
        batch = build_batch([Record(value=value)], producer_id=pid, producer_epoch=epoch,
                            base_sequence=seq, transactional=txn)
        return await self.logs.get_log(tp).append(bytes(batch))

    async def control_batches(self, tp):
        info = await self.logs.get_log(tp).read(0, 1 << 20, IsolationLevel.READ_UNCOMMITTED)
        return [(h.producer_id, h.producer_epoch) for d in info.records for _, h in iter_batches(d)
                if h.is_control]


@pytest.fixture
async def broker(tmp_path):
    b = await Broker(tmp_path).start()
    yield b
    await b.stop()


async def expect(code, coro):
    with pytest.raises(KafkaError) as info:
        await coro
    assert info.value.code is code, info.value
    return info.value


async def test_idempotent_producers_get_unique_ids_across_restarts(tmp_path):
    b = await Broker(tmp_path).start()
    first = [await b.coordinator.init_producer_id(None, 0) for _ in range(12)]
    await b.stop()
    b = await Broker(tmp_path).start()
    later = await b.coordinator.init_producer_id(None, 0)
    await b.stop()
    ids = [p.producer_id for p in first] + [later.producer_id]
    assert len(set(ids)) == 13 and all(p.epoch == 0 for p in first)
    assert later.producer_id >= 20  # the partly used block is skipped, never reused


async def test_producer_id_blocks_go_to_a_file_not_to_the_transaction_log(tmp_path):
    """Kafka's tools decode every record of __transaction_state as a transaction; a block record
    of eosbroker's own stopped kafka-dump-log --transaction-log-decoder."""
    b = await Broker(tmp_path).start()
    ids = [(await b.coordinator.init_producer_id(None, 0)).producer_id for _ in range(12)]
    partition0 = b.logs.get_log(TopicPartition(TRANSACTION_STATE_TOPIC, 0))
    assert partition0.log_end_offset == 0
    await b.stop()
    assert ids == list(range(12)) and (tmp_path / "producer_id_block").read_text() == "20\n"


async def test_a_block_record_of_an_earlier_version_is_still_honoured(tmp_path):
    b = await Broker(tmp_path).start()
    legacy = ProducerIdBlock(first_producer_id=500, size=10)  # as earlier versions wrote it
    await b.coordinator.store._write(0, producer_id_block_key(), producer_id_block_value(legacy))
    await b.stop()
    b = await Broker(tmp_path).start()
    fresh = await b.coordinator.init_producer_id(None, 0)
    await b.stop()
    assert fresh.producer_id == 510 and (tmp_path / "producer_id_block").read_text() == "520\n"


async def test_commit_writes_markers_everywhere_then_completes(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0, T1])
    await broker.produce(T0, p.producer_id, p.epoch, 0)  # T1 gets no data, but a marker
    assert broker.logs.get_log(T0).last_stable_offset == 0
    await c.end_txn("tx", p.producer_id, p.epoch, commit=True)
    await c.quiesce()
    assert c.describe("tx").state is TxnState.COMPLETE_COMMIT
    assert await broker.control_batches(T0) == [(p.producer_id, 0)]
    assert await broker.control_batches(T1) == [(p.producer_id, 0)]
    assert broker.logs.get_log(T0).last_stable_offset == 2
    await c.end_txn("tx", p.producer_id, p.epoch, commit=True)  # retry is fine
    await expect(ErrorCode.invalid_txn_state, c.end_txn("tx", p.producer_id, p.epoch, False))


async def test_second_producer_fences_the_first_and_aborts_its_transaction(broker):
    c = broker.coordinator
    zombie = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", zombie.producer_id, zombie.epoch, [T0])
    await broker.produce(T0, zombie.producer_id, zombie.epoch, 0)
    await expect(ErrorCode.concurrent_transactions, c.init_producer_id("tx", 60000))
    await c.quiesce()
    assert await broker.control_batches(T0) == [(zombie.producer_id, 1)]  # ABORT, bumped epoch
    assert broker.logs.get_log(T0).last_stable_offset == 2
    fresh = await c.init_producer_id("tx", 60000)
    assert (fresh.producer_id, fresh.epoch) == (zombie.producer_id, 2)
    err = await expect(ErrorCode.producer_fenced,
                       c.end_txn("tx", zombie.producer_id, zombie.epoch, True))
    assert "InitProducerId" in err.message
    with pytest.raises(KafkaError) as info:
        await broker.produce(T0, zombie.producer_id, zombie.epoch, 1)
    assert info.value.code is ErrorCode.invalid_producer_epoch


async def test_timed_out_transaction_is_aborted_and_the_producer_told_why(broker):
    c = broker.coordinator
    p = await c.init_producer_id("orders-1", 60000)
    await c.add_partitions("orders-1", p.producer_id, p.epoch, [T0])
    await broker.produce(T0, p.producer_id, p.epoch, 0)
    broker.clock.ms += 60000
    await c.abort_timed_out_transactions()
    assert c.describe("orders-1").state is TxnState.ONGOING  # not yet: the bound is strict
    broker.clock.ms += 1
    await c.abort_timed_out_transactions()
    await c.quiesce()
    assert c.describe("orders-1").state is TxnState.COMPLETE_ABORT
    assert broker.logs.get_log(T0).last_stable_offset == 2
    err = await expect(ErrorCode.producer_fenced, c.end_txn("orders-1", p.producer_id, 0, True))
    assert ("transaction of 'orders-1' timed out after 60000 ms and was aborted by the broker; "
            "producer epoch is now 1") in err.message


async def test_offsets_partition_joins_the_transaction_and_group_hears_the_result(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 60000)
    await c.add_offsets("tx", p.producer_id, p.epoch, "my-group")
    md = c.describe("tx")
    [tp] = md.topic_partitions
    assert tp.topic == "__consumer_offsets"
    await c.end_txn("tx", p.producer_id, p.epoch, commit=False)
    await c.quiesce()
    assert broker.group.completed == [(p.producer_id, None, False)]


async def test_prepared_transaction_is_finished_after_a_restart(tmp_path):
    b = await Broker(tmp_path).start()
    c = b.coordinator
    p = await c.init_producer_id("tx", 60000)
    await c.add_partitions("tx", p.producer_id, p.epoch, [T0])
    await b.produce(T0, p.producer_id, p.epoch, 0)
    md = c.describe("tx")
    # the broker dies right after persisting PrepareCommit, before any marker
    prepare = md.prepare_end_txn(producer_id=p.producer_id, producer_epoch=0, commit=True,
                                 now_ms=b.clock())
    await c.store.append("tx", prepare)
    await b.stop()
    b = await Broker(tmp_path).start()
    try:
        await b.coordinator.quiesce()
        assert b.coordinator.describe("tx").state is TxnState.COMPLETE_COMMIT
        assert await b.control_batches(T0) == [(p.producer_id, 0)]
        assert b.logs.get_log(T0).last_stable_offset == 2
    finally:
        await b.stop()


async def test_state_survives_restart(tmp_path):
    b = await Broker(tmp_path).start()
    p = await b.coordinator.init_producer_id("tx", 45000)
    await b.coordinator.add_partitions("tx", p.producer_id, p.epoch, [T1])
    await b.stop()
    b = await Broker(tmp_path).start()
    try:
        md = b.coordinator.describe("tx")
        assert (md.state, md.producer_id, md.producer_epoch, md.txn_timeout_ms) == (
            TxnState.ONGOING, p.producer_id, 0, 45000)
        assert md.topic_partitions == {T1}
        assert b.logs.topics[TRANSACTION_STATE_TOPIC].partitions == 3
    finally:
        await b.stop()


async def test_bad_requests(broker):
    c = broker.coordinator
    err = await expect(ErrorCode.invalid_transaction_timeout, c.init_producer_id("tx", 900_001))
    assert "transaction.max.timeout.ms" in err.message
    await expect(ErrorCode.invalid_transaction_timeout, c.init_producer_id("tx", 0))
    await expect(ErrorCode.invalid_request, c.init_producer_id("", 1000))
    await expect(ErrorCode.invalid_producer_id_mapping, c.add_partitions("nope", 1, 0, [T0]))
    await expect(ErrorCode.invalid_producer_id_mapping, c.end_txn("nope", 1, 0, True))
    p = await c.init_producer_id("tx", 1000)
    await expect(ErrorCode.invalid_txn_state, c.end_txn("tx", p.producer_id, p.epoch, True))
    await expect(ErrorCode.invalid_producer_id_mapping, c.add_partitions("tx", 999, 0, [T0]))
    await expect(ErrorCode.producer_fenced, c.add_partitions("tx", p.producer_id, 5, [T0]))
    assert c.describe("tx").state is TxnState.EMPTY


async def test_kip360_recovery_bumps_the_epoch(broker):
    c = broker.coordinator
    p = await c.init_producer_id("tx", 1000)
    bumped = await c.init_producer_id("tx", 1000, ProducerIdAndEpoch(producer_id=p.producer_id,
                                                                     epoch=p.epoch))
    assert (bumped.producer_id, bumped.epoch) == (p.producer_id, 1)


async def test_idle_ids_expire(tmp_path):
    config = TxnCoordinatorConfig(num_partitions=3, transactional_id_expiration_ms=1000)
    b = await Broker(tmp_path, config).start()
    await b.coordinator.init_producer_id("old", 1000)
    b.clock.ms += 1000
    await b.coordinator.init_producer_id("new", 1000)
    await b.coordinator.expire_transactional_ids()
    assert b.coordinator.describe("old") is None and b.coordinator.describe("new") is not None
    await b.stop()
    b = await Broker(tmp_path, config).start()
    assert b.coordinator.describe("old") is None and b.coordinator.describe("new") is not None
    await b.stop()


async def test_list_transactions_filters(broker):
    c = broker.coordinator
    p = await c.init_producer_id("a", 1000)
    await c.init_producer_id("b", 1000)
    await c.add_partitions("a", p.producer_id, p.epoch, [T0])
    assert {m.transactional_id for m in c.list_transactions()} == {"a", "b"}
    assert [m.transactional_id for m in c.list_transactions(frozenset({TxnState.ONGOING}))] == ["a"]
    assert [m.transactional_id for m in c.list_transactions(producer_ids=frozenset({p.producer_id}))] == ["a"]
    broker.clock.ms += 500
    running = {m.transactional_id for m in c.list_transactions(min_duration_ms=499)}
    assert running == {"a", "b"}  # "b" has no start time, which Kafka's filter lets through
    assert [m.transactional_id for m in c.list_transactions(min_duration_ms=500)] == ["b"]

