"""TransactionCoordinator: the actor that owns every transactional id of this broker.

The actor is coordinator/runtime.py's: typed messages (messages.py) run one at a time. Each
asks the id's TxnShard (shard.py, pure) to decide, which returns the __transaction_state record
to append, the answer and the effects; the runtime appends it, replays it into the shard, runs
the effects (markers, outcome counts, log lines) and answers. A client's request does not hold
the actor while its record is written (runtime.apply_later): the records of many ids share one
flush, and only the next request of the same id waits for it. EndTxn answers once
PREPARE_COMMIT / PREPARE_ABORT is persisted; the markers are written by a separate task, which
queues a completion that persists COMPLETE_COMMIT / COMPLETE_ABORT. Until then the id answers
CONCURRENT_TRANSACTIONS. Timers queue a scan for timed-out transactions (aborted with a bumped
epoch, so the zombie is fenced) and for ids idle past transactional.id.expiration.ms. Start-up
replays __transaction_state through the same replay and finishes any transaction that was
preparing when the broker stopped.

Sharding (docs/cluster.md): each partition of __transaction_state is a shard, served while this
broker leads it (LeadershipListener). on_elected replays the partition and resumes the markers of
every transaction found preparing, with the leader epoch as coordinator epoch; on_resigned drops
its ids and stops their marker writes (the next coordinator redoes them). Ids of other shards get
NOT_COORDINATOR. A single node (no ClusterView) elects every shard itself at start, epoch 0.

Both transaction protocols are served at once, chosen per request as Kafka does (tv2 below:
Produce v12+, EndTxn v5+, TxnOffsetCommit v5+); the finalized transaction.version only picks the
__transaction_state value version and how the coordinator's own aborts bump the epoch.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import assert_never

from protocol.errors import ErrorCode, KafkaError
from storage.api import ClusterView, LogSource, ProducerIdBlockSource, TopicPartition

from ..runtime import CoordinatorRuntime, Pending, wall_clock_ms
from ..shards import CoordinatorShards
from ..tasks import DEFAULT_BACKOFF, Backoff
from .log import TRANSACTION_STATE_TOPIC, TxnLogEntry, partition_for
from .marker_writer import CONSUMER_OFFSETS, GroupTxnParticipant, MarkerWriter, TxnMarker
from .messages import (
    AbortTimedOut,
    AddPartitions,
    Barrier,
    Complete,
    CompleteTxn,
    CountOutcome,
    EndTxn,
    ExpireIds,
    InitProducerId,
    InstallShard,
    LogLine,
    SendMarkers,
    TxnEffect,
    TxnMessage,
)
from .metadata import ProducerIdAndEpoch, TransactionMetadata
from .outcomes import TxnOutcomes
from .shard import TxnShard
from .sharding import TxnShards
from .state import TxnState
from .state_store import TransactionStateStore
from .txn_markers import RemoteMarkerWriter
from .verification import verify_partitions

__all__ = ("TransactionCoordinator", "TxnCoordinatorConfig")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnCoordinatorConfig:
    num_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000
    offsets_num_partitions: int = 50  # offsets.topic.num.partitions, for AddOffsetsToTxn
    producer_id_block_size: int = 1000
    segment_bytes: int = 104_857_600  # transaction.state.log.segment.bytes
    # A single node never hands the coordinator role to another broker, so one epoch serves.
    coordinator_epoch: int = 0
    # Between attempts at a marker (or any failed background work): doubled up to the cap.
    retry_backoff: Backoff = DEFAULT_BACKOFF


class TransactionCoordinator(TxnShards):
    def __init__(
        self,
        logs: LogSource,
        config: TxnCoordinatorConfig,
        group: Callable[[], GroupTxnParticipant | None] = lambda: None,
        clock: Callable[[], int] = wall_clock_ms,
        *,
        cluster: ClusterView | None = None,
        producer_id_blocks: ProducerIdBlockSource,
        remote_markers: RemoteMarkerWriter | None = None,
        transaction_version: Callable[[], int] = lambda: 0,
    ) -> None:
        self.config = config
        self._now = clock
        # The finalized transaction.version, read when it matters: UpdateFeatures changes it.
        self.transaction_version = transaction_version
        self.cluster = cluster
        self.store = TransactionStateStore(logs, config.num_partitions, config.producer_id_block_size,
                                           producer_id_blocks, segment_bytes=config.segment_bytes)
        self.markers = MarkerWriter(logs, config.coordinator_epoch, group, config.retry_backoff,
                                    cluster=cluster, remote=remote_markers)
        self.shards = CoordinatorShards(TRANSACTION_STATE_TOPIC, "transactional id", cluster)
        self.txn_shards: dict[int, TxnShard] = {}  # the loaded shards, by partition
        self.outcomes = TxnOutcomes()
        self.runtime: CoordinatorRuntime[TxnMessage, TxnLogEntry, TxnEffect] = CoordinatorRuntime(
            "transaction coordinator", self._execute, write=self._write, run_effect=self._run_effect,
            clock_ms=clock, backoff=config.retry_backoff, key_of=_transactional_id,
            start_write=lambda records: self.store.submit(records, self.transaction_version()))
        self._marker_tasks: dict[str, asyncio.Task[None]] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.ensure_topic()
        self.runtime.start()
        self.runtime.every("timed-out transaction scan", self.config.abort_timed_out_interval_ms, AbortTimedOut)
        self.runtime.every("transactional id expiration", self.config.remove_expired_interval_ms, ExpireIds)
        if self.cluster is not None and not self.cluster.leads_everything:
            self.cluster.add_listener(self)
            return
        # A broker on its own leads every shard, for good; it serves none before all are loaded.
        for partition in range(self.store.num_partitions):
            if self.shards.elect(partition, self.config.coordinator_epoch):
                await self._load(partition, self.config.coordinator_epoch)

    async def stop(self) -> None:
        if self.runtime.running:
            try:  # let markers in flight finish; a restart would resume them anyway
                await asyncio.wait_for(self.quiesce(), 5)
            except (TimeoutError, KafkaError):
                log.warning("stopping with transaction markers still in flight")
        await self.runtime.stop()

    async def quiesce(self) -> None:
        """Wait until every marker write in flight has finished and its completion is persisted
        (shutdown, and tests that need the end state without sleeping)."""
        await self.runtime.settled()  # an EndTxn being written starts its markers once it is
        while self._marker_tasks:
            # wait, not gather: a caller that stops waiting must not cancel the markers
            await asyncio.wait(list(self._marker_tasks.values()))
            await self.runtime.call(Barrier())
            await self.runtime.settled()

    async def abort_timed_out_transactions(self) -> None:
        await self.runtime.call(AbortTimedOut())

    async def expire_transactional_ids(self) -> None:
        await self.runtime.call(ExpireIds())

    # -- public face ---------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.store.num_partitions)

    def check_coordinator(self, transactional_id: str) -> None:
        """NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS unless the id's shard is loaded here."""
        self.shards.check(self.partition_for(transactional_id), transactional_id)

    async def init_producer_id(
        self, transactional_id: str | None, txn_timeout_ms: int,
        expected: ProducerIdAndEpoch | None = None,
    ) -> ProducerIdAndEpoch:
        return await self.runtime.call(InitProducerId(transactional_id=transactional_id,
                                                      txn_timeout_ms=txn_timeout_ms, expected=expected))

    async def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int,
        partitions: Iterable[TopicPartition], tv2: bool = False,
    ) -> None:
        """AddPartitionsToTxn, or (tv2) the implicit add of a V2 Produce / TxnOffsetCommit."""
        await self.runtime.call(AddPartitions(transactional_id=transactional_id, producer_id=producer_id,
                                              producer_epoch=producer_epoch, partitions=frozenset(partitions),
                                              tv2=tv2))

    def offsets_partition(self, group_id: str) -> TopicPartition:
        return TopicPartition(CONSUMER_OFFSETS,
                              partition_for(group_id, self.config.offsets_num_partitions))

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
        tv2: bool = False,
    ) -> None:
        await self.add_partitions(transactional_id, producer_id, producer_epoch,
                                  [self.offsets_partition(group_id)], tv2)

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
        tv2: bool = False,
    ) -> ProducerIdAndEpoch:
        """Commit or abort; the producer id and epoch to continue with (bumped under tv2)."""
        return await self.runtime.call(EndTxn(transactional_id=transactional_id, producer_id=producer_id,
                                              producer_epoch=producer_epoch, commit=commit, tv2=tv2))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        self.shards.check(self.partition_for(transactional_id), transactional_id)
        return verify_partitions(self.describe(transactional_id), transactional_id, producer_id, producer_epoch,
                                 partitions)

    async def markers_written(self, transactional_id: str, timeout_s: float) -> None:
        """Wait up to timeout_s for the markers of the id's last transaction, and its COMPLETE_*,
        to be written here: a V2 Produce that found them still being written tries again then,
        not after a fixed pause. Without such a write here (another broker coordinates the id, or
        a state write is pending) it waits the whole timeout."""
        task = self._marker_tasks.get(transactional_id)
        if task is None or task.done():
            await asyncio.sleep(timeout_s)
        else:
            await asyncio.wait({task}, timeout=timeout_s)

    async def markers_done(self, transactional_id: str, timeout_s: float) -> None:
        """markers_written, but at once when no such write is under way here."""
        task = self._marker_tasks.get(transactional_id)
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=timeout_s)

    @property
    def transactions(self) -> Mapping[str, TransactionMetadata]:
        """Every id of the shards loaded here (a copy: for metrics and tests)."""
        return {i: md for shard in self.txn_shards.values() for i, md in shard.transactions.items()}

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        shard = self.txn_shards.get(self.partition_for(transactional_id))
        return None if shard is None else shard.get(transactional_id)

    def list_transactions(
        self, states: frozenset[TxnState] = frozenset(), producer_ids: frozenset[int] = frozenset(),
        min_duration_ms: int = -1, transactional_id_pattern: re.Pattern[str] | None = None,
    ) -> list[TransactionMetadata]:
        """Kafka's listTransactionStates filters; the pattern must match the whole id (matches())."""
        now = self._now()
        return [
            md for md in self.transactions.values()
            if (not states or md.state in states)
            and (not producer_ids or md.producer_id in producer_ids)
            # Kafka's filter: running longer than the duration (ids without a start pass too)
            and (min_duration_ms < 0 or now - md.txn_start_timestamp > min_duration_ms)
            and (transactional_id_pattern is None or transactional_id_pattern.fullmatch(md.transactional_id))
        ]

    # -- the actor: messages -------------------------------------------------------------------

    async def _execute(self, message: TxnMessage) -> object:
        match message:
            case InitProducerId():
                return await self._init_producer_id(message)
            case EndTxn():
                return await self._end_txn(message)
            case AddPartitions():
                return await self._add_partitions(message)
            case CompleteTxn():
                return await self._complete(message.transactional_id, message.producer_epoch, later=True)
            case AbortTimedOut():
                await self._abort_timed_out()
            case ExpireIds():
                await self._expire_ids()
            case InstallShard():
                self._install(message.partition, message.epoch, message.shard)
            case Barrier():
                pass
            case _:
                assert_never(message)
        return None

    def _shard_of(self, transactional_id: str) -> TxnShard:
        if not transactional_id:
            raise KafkaError(ErrorCode.invalid_request, "the transactional id is empty")
        self.check_coordinator(transactional_id)
        return self.txn_shards[self.partition_for(transactional_id)]

    async def _new_ids(self, count: int) -> list[int]:
        # Deciding is synchronous, so the ids a decision may take are allocated (durably) first.
        return [await self.store.generate_producer_id() for _ in range(count)]

    async def _init_producer_id(self, m: InitProducerId) -> ProducerIdAndEpoch | Pending[ProducerIdAndEpoch]:
        if m.transactional_id is None:  # idempotent producer: always a fresh id
            return ProducerIdAndEpoch(producer_id=await self.store.generate_producer_id(), epoch=0)
        shard = self._shard_of(m.transactional_id)
        if not 0 < m.txn_timeout_ms <= self.config.max_timeout_ms:
            raise KafkaError(
                ErrorCode.invalid_transaction_timeout,
                f"transaction.timeout.ms={m.txn_timeout_ms} of '{m.transactional_id}' must be in "
                f"(0, {self.config.max_timeout_ms}] (transaction.max.timeout.ms)",
            )
        new_ids = await self._new_ids(shard.producer_ids_for_init(m.transactional_id))
        return await self.runtime.apply_later(shard, shard.init_producer_id(
            m.transactional_id, m.txn_timeout_ms, m.expected, new_ids=new_ids, now_ms=self._now(),
            server_tv=self.transaction_version()))

    async def _add_partitions(self, m: AddPartitions) -> None | Pending[None]:
        shard = self._shard_of(m.transactional_id)
        return await self.runtime.apply_later(shard, shard.add_partitions(
            m.transactional_id, m.producer_id, m.producer_epoch, m.partitions, tv2=m.tv2, now_ms=self._now()))

    async def _end_txn(self, m: EndTxn) -> ProducerIdAndEpoch | Pending[ProducerIdAndEpoch]:
        shard = self._shard_of(m.transactional_id)
        new_ids = await self._new_ids(shard.producer_ids_for_end_txn(m.transactional_id, m.tv2))
        return await self.runtime.apply_later(shard, shard.end_txn(
            m.transactional_id, m.producer_id, m.producer_epoch, commit=m.commit, tv2=m.tv2, new_ids=new_ids,
            now_ms=self._now()))

    async def _complete(self, transactional_id: str, producer_epoch: int, *,
                        later: bool = False) -> Pending[None] | None:
        """later: CompleteTxn's (the actor goes on); an effect's Complete is written in place."""
        shard = self.txn_shards.get(self.partition_for(transactional_id))
        if shard is None:  # resigned: the next coordinator completes it
            return None
        result = shard.complete(transactional_id, producer_epoch, now_ms=self._now())
        if later:
            return await self.runtime.apply_later(shard, result)
        await self.runtime.apply(shard, result)
        return None

    async def _abort_timed_out(self) -> None:
        now = self._now()
        for shard in list(self.txn_shards.values()):
            for transactional_id in shard.timed_out(now):
                try:
                    await self.runtime.apply(shard, shard.abort_timed_out(
                        transactional_id, now_ms=now, server_tv=self.transaction_version()))
                except KafkaError:
                    log.exception("could not abort timed-out transaction of '%s'", transactional_id)

    async def _expire_ids(self) -> None:
        now = self._now()
        expiration = self.config.transactional_id_expiration_ms
        for shard in list(self.txn_shards.values()):
            for transactional_id in shard.expired(now, expiration):
                await self.runtime.apply(shard, shard.expire(transactional_id, expiration_ms=expiration))

    # -- the actor: writes and effects -----------------------------------------------------------

    async def _write(self, records: Sequence[TxnLogEntry]) -> None:
        written = self.store.submit(records, self.transaction_version())
        if written is not None:
            await written

    async def _run_effect(self, effect: TxnEffect) -> None:
        match effect:
            case SendMarkers(marker):
                self._send_markers(marker)
            case Complete(transactional_id, producer_epoch):
                await self._complete(transactional_id, producer_epoch)
            case CountOutcome(commit, cause):
                self.outcomes.record(commit, cause)
            case LogLine(level, message):
                log.log(level, "%s", message)
            case _:
                assert_never(effect)

    def _send_markers(self, marker: TxnMarker) -> None:
        """Write the markers, then persist COMPLETE_*: supervised, so a failure of either is
        logged and tried again; the id answers CONCURRENT_TRANSACTIONS until both are done."""
        transactional_id = marker.transactional_id
        partition = self.partition_for(transactional_id)
        if self.shards.status(partition) is None:
            # The shard moved while the decision was being written: the decision is durable, and
            # the next coordinator completes it when it loads the shard.
            log.info("'%s': %s-%d is no longer coordinated here; its new coordinator writes the markers",
                     transactional_id, TRANSACTION_STATE_TOPIC, partition)
            return
        txn = replace(marker, coordinator_epoch=self.shards.epoch(partition))
        written: set[TopicPartition] = set()  # kept across reruns: a rerun skips them

        async def write_then_complete() -> None:
            await self.markers.write(txn, written)
            await self.runtime.call(CompleteTxn(transactional_id=transactional_id,
                                                producer_epoch=txn.producer_epoch))

        task = self.runtime.tasks.spawn(f"markers of '{transactional_id}'", write_then_complete)
        self._marker_tasks[transactional_id] = task
        task.add_done_callback(lambda t: self._marker_tasks.pop(transactional_id, None)
                               if self._marker_tasks.get(transactional_id) is t else None)


def _transactional_id(message: TxnMessage) -> str | None:
    """The key a message waits on while an earlier one's record is written (runtime.key_of)."""
    match message:
        case InitProducerId() | AddPartitions() | EndTxn() | CompleteTxn():
            return message.transactional_id
    return None
