"""The transaction coordinator sharded by __transaction_state partitions (docs/cluster.md), with
two coordinators over one LogManager as two brokers over one database: which of them serves an id
is decided by the ClusterView, markers for partitions led elsewhere go through the remote writer
(here the leader's own write_txn_markers, as its WriteTxnMarkers handler calls it), and a
coordinator elected after another one died between PrepareCommit and the markers finishes the
transaction with its own coordinator epoch."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from coordinator.tasks import Backoff
from coordinator.transaction.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from coordinator.transaction.log import TRANSACTION_STATE_TOPIC, partition_for
from coordinator.transaction.marker_writer import MarkerWriter, TxnMarker
from coordinator.transaction.state import TxnState
from coordinator.transaction.txn_markers import TxnMarkerEntry, write_txn_markers
from protocol.control import read_end_txn_marker
from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from protocol.records import Record, build_batch
from storage.api import IsolationLevel, PartitionLeader, TopicPartition
from storage.log_manager import LogManager

from ..cluster_view import StaticClusterView

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
CONFIG = TxnCoordinatorConfig(num_partitions=3, producer_id_block_size=10, abort_timed_out_interval_ms=3_600_000,
                              retry_backoff=Backoff(initial_ms=1, max_ms=5))
SHARD = TopicPartition(TRANSACTION_STATE_TOPIC, partition_for("tx", CONFIG.num_partitions))


class Blocks:
    """Cluster-wide producer-id blocks (PostgreSQL's cluster_meta counter in a real cluster)."""

    def __init__(self) -> None:
        self.next = 0

    async def allocate_producer_ids(self, count: int) -> int:
        first, self.next = self.next, self.next + count
        return first


class Leader:
    """The other broker's side of WriteTxnMarkers: it appends to the shared logs."""

    def __init__(self, logs: LogManager, fail: bool = False) -> None:
        self.logs, self.fail = logs, fail
        self.sent: list[tuple[int, TxnMarkerEntry]] = []

    async def write_txn_markers(self, node_id: int, entry: TxnMarkerEntry) -> Mapping[TopicPartition, ErrorCode]:
        self.sent.append((node_id, entry))
        if self.fail:
            raise KafkaError(ErrorCode.network_exception, f"broker {node_id} is unreachable")
        return await write_txn_markers(self.logs, entry)


@pytest.fixture
async def logs(tmp_path):  # type: ignore[no-untyped-def]
    manager = LogManager(tmp_path, {})
    manager.load()
    manager.start()
    await manager.create_topic("orders", 2)
    yield manager
    await manager.close()


def coordinator(logs, node_id, leader, blocks, **leaders):  # type: ignore[no-untyped-def]
    view = StaticClusterView(node_id, {T0: PartitionLeader(1, 0), T1: PartitionLeader(2, 0)})
    return TransactionCoordinator(logs, CONFIG, cluster=view, producer_id_blocks=blocks, remote_markers=leader)


async def expect(code: ErrorCode, coro) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as info:
        await coro
    assert info.value.code is code, info.value


async def produce(logs: LogManager, tp: TopicPartition, pid: int, epoch: int) -> None:
    batch = build_batch([Record(value=b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                        transactional=True)
    await logs.get_log(tp).append(bytes(batch))


async def markers(logs: LogManager, tp: TopicPartition) -> list[tuple[bool, int]]:
    """(commit?, coordinator epoch) of each marker in tp."""
    info = await logs.get_log(tp).read(0, 1 << 20, IsolationLevel.READ_UNCOMMITTED)
    out = []
    for data in info.records:
        for pos, header in iter_batches(data):
            marker = read_end_txn_marker(data, pos, header) if header.is_control else None
            if marker is not None:
                out.append((marker.control_type.name == "COMMIT", marker.coordinator_epoch))
    return out


async def test_ids_are_served_only_by_the_shard_leader_and_markers_go_to_each_leader(logs) -> None:  # type: ignore[no-untyped-def]
    leader = Leader(logs)
    c = coordinator(logs, 1, leader, Blocks())
    await c.start()
    try:
        assert c.cluster.listeners == [c]  # type: ignore[union-attr]
        await expect(ErrorCode.not_coordinator, c.init_producer_id("tx", 60000))
        idempotent = await c.init_producer_id(None, 0)  # any broker hands out producer ids
        await c.on_elected(SHARD, 5)
        await c.shards.wait_loaded(SHARD.partition)
        p = await c.init_producer_id("tx", 60000)
        assert p.producer_id != idempotent.producer_id
        await c.add_partitions("tx", p.producer_id, p.epoch, [T0, T1])
        await produce(logs, T0, p.producer_id, p.epoch)
        await produce(logs, T1, p.producer_id, p.epoch)
        await c.end_txn("tx", p.producer_id, p.epoch, commit=True)
        await c.quiesce()
        assert c.describe("tx").state is TxnState.COMPLETE_COMMIT
        assert await markers(logs, T0) == await markers(logs, T1) == [(True, 5)]
        assert [(node, e.partitions, e.coordinator_epoch) for node, e in leader.sent] == [(2, (T1,), 5)]
        await c.on_resigned(SHARD)
        assert c.describe("tx") is None
        await expect(ErrorCode.not_coordinator, c.end_txn("tx", p.producer_id, p.epoch, commit=True))
    finally:
        await c.stop()


async def test_the_next_coordinator_completes_a_commit_its_predecessor_prepared(logs) -> None:  # type: ignore[no-untyped-def]
    blocks = Blocks()
    first = coordinator(logs, 1, Leader(logs, fail=True), blocks)  # broker 2 unreachable from 1
    await first.start()
    await first.on_elected(SHARD, 5)
    await first.shards.wait_loaded(SHARD.partition)
    p = await first.init_producer_id("tx", 60000)
    await first.add_partitions("tx", p.producer_id, p.epoch, [T0, T1])
    await produce(logs, T1, p.producer_id, p.epoch)
    await first.end_txn("tx", p.producer_id, p.epoch, commit=True)
    assert first.describe("tx").state is TxnState.PREPARE_COMMIT
    await first.on_resigned(SHARD)  # it loses the shard with T1's marker still unwritten
    await first.stop()
    assert logs.get_log(T1).last_stable_offset == 0
    second = coordinator(logs, 2, Leader(logs), blocks)
    await second.start()
    try:
        await second.on_elected(SHARD, 6)
        await second.shards.wait_loaded(SHARD.partition)
        await second.quiesce()
        assert second.describe("tx").state is TxnState.COMPLETE_COMMIT
        assert (await markers(logs, T1))[-1] == (True, 6)
        assert logs.get_log(T1).last_stable_offset == logs.get_log(T1).high_watermark == 2
        fresh = await second.init_producer_id("tx", 60000)
        assert (fresh.producer_id, fresh.epoch) == (p.producer_id, p.epoch + 1)
    finally:
        await second.stop()


async def test_a_shard_still_loading_answers_load_in_progress(logs) -> None:  # type: ignore[no-untyped-def]
    c = coordinator(logs, 1, Leader(logs), Blocks())
    await c.start()
    try:
        await c.on_elected(SHARD, 1)
        await expect(ErrorCode.coordinator_load_in_progress, c.init_producer_id("tx", 60000))
        await c.shards.wait_loaded(SHARD.partition)
        await c.init_producer_id("tx", 60000)
    finally:
        await c.stop()


class LateView(StaticClusterView):
    """A view that learns of a new partition's leader only after being asked once."""

    def __init__(self) -> None:
        super().__init__(1)
        self.asked = asyncio.Event()

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        found = super().leader(tp)
        if found is None and tp.topic == "orders":
            self.asked.set()
        return found


async def test_a_marker_waits_for_the_leader_of_a_partition_the_view_has_not_seen(logs) -> None:  # type: ignore[no-untyped-def]
    view, leader = LateView(), Leader(logs)
    writer = MarkerWriter(logs, 3, cluster=view, remote=leader, backoff=CONFIG.retry_backoff)
    gone = TopicPartition("deleted", 0)
    txn = TxnMarker(transactional_id="tx", producer_id=7, producer_epoch=0, commit=True,
                    partitions=frozenset({T1, gone}))
    task = asyncio.ensure_future(writer.write(txn))
    await view.asked.wait()
    assert not task.done()
    view.leaders[T1] = PartitionLeader(2, 4)
    await task  # the deleted topic's marker is dropped, T1's is written at its leader
    assert [(node, e.partitions) for node, e in leader.sent] == [(2, (T1,))]
    assert await markers(logs, T1) == [(True, 3)]


async def test_end_txn_whose_shard_moves_while_the_decision_is_written_leaves_it_to_the_next(logs) -> None:  # type: ignore[no-untyped-def]
    """The shard is resigned while PrepareCommit is being appended (a lease lapsing under load):
    the decision is durable, so EndTxn succeeds, no marker is sent from here, and the next
    coordinator completes the commit."""
    blocks = Blocks()
    first = coordinator(logs, 1, Leader(logs), blocks)
    await first.start()
    await first.on_elected(SHARD, 5)
    await first.shards.wait_loaded(SHARD.partition)
    p = await first.init_producer_id("tx", 60000)
    await first.add_partitions("tx", p.producer_id, p.epoch, [T0, T1])
    await produce(logs, T0, p.producer_id, p.epoch)
    submit = first.store.submit

    def submit_then_lose_the_shard(*args):  # type: ignore[no-untyped-def]
        written = submit(*args)

        async def then_resign() -> None:
            if written is not None:
                await written
            await first.on_resigned(SHARD)

        return asyncio.ensure_future(then_resign())

    first.store.submit = submit_then_lose_the_shard  # type: ignore[method-assign]
    await first.end_txn("tx", p.producer_id, p.epoch, commit=True)
    await first.stop()
    assert await markers(logs, T0) == []
    second = coordinator(logs, 2, Leader(logs), blocks)
    await second.start()
    try:
        await second.on_elected(SHARD, 6)
        await second.shards.wait_loaded(SHARD.partition)
        await second.quiesce()
        assert second.describe("tx").state is TxnState.COMPLETE_COMMIT
        assert await markers(logs, T0) == [(True, 6)]
    finally:
        await second.stop()
