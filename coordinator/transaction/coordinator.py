"""TransactionCoordinator: the actor that owns every transactional id of this broker.

One task runs commands from a queue, one at a time: decide with TransactionMetadata (pure),
append the transition to __transaction_state, then apply it and answer. EndTxn answers once
PREPARE_COMMIT / PREPARE_ABORT is persisted; the markers are written by a separate task, which
queues a completion that persists COMPLETE_COMMIT / COMPLETE_ABORT. Until then the id answers
CONCURRENT_TRANSACTIONS. Timers queue a scan for timed-out transactions (aborted with a bumped
epoch, so the zombie is fenced) and for ids idle past transactional.id.expiration.ms. Start-up
replays __transaction_state through the same apply and finishes any transaction that was
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
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, assert_never

from protocol.errors import ErrorCode, KafkaError
from storage.api import ClusterView, LogSource, ProducerIdBlockSource, TopicPartition

from ..shards import CoordinatorShards
from ..tasks import DEFAULT_BACKOFF, Backoff, TaskSupervisor
from .end_txn import decide_end_txn
from .log import TRANSACTION_STATE_TOPIC, partition_for
from .marker_writer import CONSUMER_OFFSETS, GroupTxnParticipant, MarkerWriter, TxnMarker
from .metadata import ProducerIdAndEpoch, TransactionMetadata, TxnTransition, is_epoch_exhausted
from .outcomes import AbortCause, TxnOutcomes
from .sharding import TxnShards
from .state import TxnState
from .state_store import TransactionStateStore
from .txn_markers import RemoteMarkerWriter
from .verification import verify_partitions

__all__ = ("TransactionCoordinator", "TxnCoordinatorConfig")

log = logging.getLogger(__name__)
R = TypeVar("R")


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


@dataclass(frozen=True, slots=True)
class _Call:
    """Run a coroutine function inside the actor; its result answers the caller."""

    fn: Callable[[], Coroutine[Any, Any, Any]]
    reply: asyncio.Future[Any] | None


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


async def _noop() -> None:
    return None


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
        self.shards = CoordinatorShards(TRANSACTION_STATE_TOPIC, "transactional id")
        self.transactions: dict[str, TransactionMetadata] = {}
        self.outcomes = TxnOutcomes()
        self._queue: asyncio.Queue[_Call] = asyncio.Queue()
        self._tasks = TaskSupervisor("transaction coordinator", config.retry_backoff)
        self._marker_tasks: dict[str, asyncio.Task[Any]] = {}
        self._run_task: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.ensure_topic()
        loop = asyncio.get_running_loop()
        self._run_task = loop.create_task(self._run(), name="txn-coordinator")
        self._run_task.add_done_callback(self._on_done)
        self._tasks.spawn("timed-out transaction scan",
                          lambda: self._timer(self.config.abort_timed_out_interval_ms, self._abort_timed_out))
        self._tasks.spawn("transactional id expiration",
                          lambda: self._timer(self.config.remove_expired_interval_ms, self._expire_ids))
        if self.cluster is not None and not self.cluster.leads_everything:
            self.cluster.add_listener(self)
            return
        # A broker on its own leads every shard, for good; it serves none before all are loaded.
        for partition in range(self.store.num_partitions):
            if self.shards.elect(partition, self.config.coordinator_epoch):
                await self._load(partition, self.config.coordinator_epoch)

    async def stop(self) -> None:
        if self._run_task is not None and not self._run_task.done():
            try:  # let markers in flight finish; a restart would resume them anyway
                await asyncio.wait_for(self.quiesce(), 5)
            except (TimeoutError, KafkaError):
                log.warning("stopping with transaction markers still in flight")
        await self._tasks.stop()
        if self._run_task is not None:
            self._run_task.cancel()
            await asyncio.gather(self._run_task, return_exceptions=True)

    def _on_done(self, task: asyncio.Task[None]) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log.error("transaction coordinator died: %r", exc, exc_info=exc)
        while not self._queue.empty():
            reply = self._queue.get_nowait().reply
            if reply is not None and not reply.done():
                reply.set_exception(
                    KafkaError(ErrorCode.coordinator_not_available, "transaction coordinator stopped")
                )

    async def quiesce(self) -> None:
        """Wait until every marker write in flight has finished and its completion is persisted
        (shutdown, and tests that need the end state without sleeping)."""
        while self._marker_tasks:
            # wait, not gather: a caller that stops waiting must not cancel the markers
            await asyncio.wait(list(self._marker_tasks.values()))
            await self._call(_noop)

    async def abort_timed_out_transactions(self) -> None:
        await self._call(self._abort_timed_out)

    async def expire_transactional_ids(self) -> None:
        await self._call(self._expire_ids)

    async def _timer(self, interval_ms: int, action: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            self._queue.put_nowait(_Call(action, None))

    async def _call(self, fn: Callable[[], Coroutine[Any, Any, R]]) -> R:
        reply: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Call(fn, reply))
        return await reply

    async def _run(self) -> None:
        while True:
            cmd = await self._queue.get()
            match cmd:
                case _Call(fn, reply):
                    try:
                        result = await fn()
                    except Exception as exc:
                        if reply is None:
                            log.exception("transaction coordinator task failed")
                        elif not reply.done():
                            reply.set_exception(exc)
                        continue
                    if reply is not None and not reply.done():
                        reply.set_result(result)
                case _:
                    assert_never(cmd)

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
        return await self._call(lambda: self._init_producer_id(transactional_id, txn_timeout_ms,
                                                               expected))

    async def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int,
        partitions: Iterable[TopicPartition], tv2: bool = False,
    ) -> None:
        """AddPartitionsToTxn, or (tv2) the implicit add of a V2 Produce / TxnOffsetCommit."""
        added = frozenset(partitions)
        await self._call(lambda: self._add_partitions(transactional_id, producer_id,
                                                      producer_epoch, added, tv2))

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
        return await self._call(lambda: self._end_txn(transactional_id, producer_id,
                                                      producer_epoch, commit, tv2))

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

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        md = self.transactions.get(transactional_id)
        return None if md is None or md.state is TxnState.DEAD else md

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

    # -- commands (run inside the actor) -----------------------------------------------------

    async def _persist(self, md: TransactionMetadata, t: TxnTransition) -> None:
        md.mark_pending(t)
        try:
            await self.store.append(md.transactional_id, t, self.transaction_version())
        except Exception as exc:
            md.cancel_pending()
            # A shard whose log this broker no longer leads: the client must find the new one.
            moved = isinstance(exc, KafkaError) and exc.code is ErrorCode.not_leader_or_follower
            raise KafkaError(
                ErrorCode.not_coordinator if moved else ErrorCode.coordinator_not_available,
                f"could not persist the transaction state of '{md.transactional_id}': {exc}",
            ) from exc
        md.complete_transition(t)

    def _known(self, transactional_id: str) -> TransactionMetadata:
        if not transactional_id:
            raise KafkaError(ErrorCode.invalid_request, "the transactional id is empty")
        self.check_coordinator(transactional_id)
        md = self.transactions.get(transactional_id)
        if md is None or md.state is TxnState.DEAD:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping,
                f"transactional id '{transactional_id}' is unknown to the coordinator; "
                "call InitProducerId first",
            )
        return md

    async def _init_producer_id(
        self, transactional_id: str | None, timeout_ms: int, expected: ProducerIdAndEpoch | None
    ) -> ProducerIdAndEpoch:
        if transactional_id is None:  # idempotent producer: always a fresh id
            return ProducerIdAndEpoch(producer_id=await self.store.generate_producer_id(), epoch=0)
        if not transactional_id:
            raise KafkaError(ErrorCode.invalid_request, "the transactional id is empty")
        self.check_coordinator(transactional_id)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise KafkaError(
                ErrorCode.invalid_transaction_timeout,
                f"transaction.timeout.ms={timeout_ms} of '{transactional_id}' must be in "
                f"(0, {self.config.max_timeout_ms}] (transaction.max.timeout.ms)",
            )
        md = self.transactions.get(transactional_id)
        if md is None or md.state is TxnState.DEAD:
            pid = await self.store.generate_producer_id()
            md = TransactionMetadata.new(transactional_id, pid, timeout_ms, self._now())
            self.transactions[transactional_id] = md
        # Deciding is synchronous, so a rotation's new id is allocated (durably) beforehand.
        spare = [await self.store.generate_producer_id()] if is_epoch_exhausted(md.producer_epoch) else []
        old_epoch = md.producer_epoch
        t = md.prepare_init_producer_id(txn_timeout_ms=timeout_ms, expected=expected,
                                        now_ms=self._now(), new_producer_id=spare.pop,
                                        server_tv=self.transaction_version())
        await self._persist(md, t)
        if t.state is TxnState.PREPARE_ABORT:
            self.outcomes.record(False, AbortCause.FENCING)
            log.warning("'%s': InitProducerId fenced producer %d epoch %d with an open "
                        "transaction; aborting it with epoch %d", transactional_id,
                        t.producer_id, old_epoch, t.producer_epoch)
            self._send_markers(md)
            raise KafkaError(
                ErrorCode.concurrent_transactions,
                f"the open transaction of the previous producer of '{transactional_id}' is being "
                "aborted; retry InitProducerId",
            )
        log.info("'%s': producer id %d epoch %d initialised", transactional_id,
                 t.producer_id, t.producer_epoch)
        return ProducerIdAndEpoch(producer_id=t.producer_id, epoch=t.producer_epoch)

    async def _add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int,
        partitions: frozenset[TopicPartition], tv2: bool,
    ) -> None:
        md = self._known(transactional_id)
        t = md.prepare_add_partitions(producer_id=producer_id, producer_epoch=epoch,
                                      partitions=partitions, now_ms=self._now(),
                                      client_tv=2 if tv2 else 0)
        if t is not None:
            await self._persist(md, t)

    async def _end_txn(self, transactional_id: str, producer_id: int, epoch: int,
                       commit: bool, tv2: bool) -> ProducerIdAndEpoch:
        md = self._known(transactional_id)
        # Deciding is synchronous, so the id an exhausted epoch moves to is allocated beforehand.
        spare = ([await self.store.generate_producer_id()]
                 if tv2 and is_epoch_exhausted(md.producer_epoch) and md.state is TxnState.ONGOING else [])
        decision = decide_end_txn(md, producer_id=producer_id, producer_epoch=epoch, commit=commit,
                                  tv2=tv2, now_ms=self._now(), new_producer_id=spare.pop)
        if decision.transition is None:
            return decision.result  # a retry of a completed EndTxn
        await self._persist(md, decision.transition)
        self.outcomes.record(commit)
        if md.topic_partitions:
            self._send_markers(md)
        else:  # a V2 abort with nothing added: no marker to write, complete it now
            await self._persist(md, md.prepare_complete(self._now()))
        return decision.result

    def _send_markers(self, md: TransactionMetadata) -> None:
        """Write the markers, then persist COMPLETE_*: supervised, so a failure of either is
        logged and tried again; the id answers CONCURRENT_TRANSACTIONS until both are done."""
        partition = self.partition_for(md.transactional_id)
        if self.shards.status(partition) is None:
            # The shard moved while the decision was being written: the decision is durable, and
            # the next coordinator completes it when it loads the shard.
            log.info("'%s': %s-%d is no longer coordinated here; its new coordinator writes the markers",
                     md.transactional_id, TRANSACTION_STATE_TOPIC, partition)
            return
        txn = TxnMarker(transactional_id=md.transactional_id, producer_id=md.producer_id,
                        producer_epoch=md.producer_epoch, commit=md.state is TxnState.PREPARE_COMMIT,
                        partitions=md.topic_partitions,
                        coordinator_epoch=self.shards.epoch(partition))
        written: set[TopicPartition] = set()  # kept across reruns: a rerun skips them

        async def write_then_complete() -> None:
            await self.markers.write(txn, written)
            await self._call(lambda: self._complete(txn.transactional_id, txn.producer_epoch))

        task = self._tasks.spawn(f"markers of '{txn.transactional_id}'", write_then_complete)
        self._marker_tasks[txn.transactional_id] = task
        task.add_done_callback(lambda t: self._marker_tasks.pop(txn.transactional_id, None)
                               if self._marker_tasks.get(txn.transactional_id) is t else None)

    async def _complete(self, transactional_id: str, epoch: int) -> None:
        md = self.transactions.get(transactional_id)
        if md is None or not md.state.is_preparing or md.producer_epoch != epoch:
            return
        await self._persist(md, md.prepare_complete(self._now()))
        log.debug("'%s': %s", transactional_id, md.state.display_name)

    async def _abort_timed_out(self) -> None:
        now = self._now()
        for md in [md for md in self.transactions.values() if md.is_timed_out(now)]:
            old_epoch = md.producer_epoch
            t = md.prepare_timeout_abort(now, self.transaction_version())
            try:
                await self._persist(md, t)
            except KafkaError:
                log.exception("could not abort timed-out transaction of '%s'", md.transactional_id)
                continue
            log.warning("transaction of '%s' (producer %d epoch %d) timed out after %d ms; "
                        "aborting it, producer epoch is now %d", md.transactional_id,
                        md.producer_id, old_epoch, md.txn_timeout_ms, md.producer_epoch)
            self.outcomes.record(False, AbortCause.TIMEOUT)
            self._send_markers(md)

    async def _expire_ids(self) -> None:
        now = self._now()
        expiration = self.config.transactional_id_expiration_ms
        for md in [md for md in self.transactions.values() if md.is_expired(now, expiration)]:
            await self._persist(md, md.prepare_dead())
            del self.transactions[md.transactional_id]
            log.info("transactional id '%s' expired after %d ms idle", md.transactional_id,
                     expiration)
