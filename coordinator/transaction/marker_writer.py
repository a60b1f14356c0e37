"""Writing the COMMIT / ABORT markers of a transaction to every partition it touched.

Kafka's TransactionMarkerChannelManager sends WriteTxnMarkers to each partition leader; on a
single node the coordinator appends the control batch to each partition log itself. A marker goes
to every added partition, also one that received no data (protocol-notes §4), including the group's
__consumer_offsets partition, after which the group coordinator applies or drops the pending
transactional offsets.

A marker is never given up while its partition exists: until it is written the partition's LSO
stays at the transaction's first offset, so read_committed consumers of it would stop for good.
An append that fails with a retriable error (KAFKA_STORAGE_ERROR on a full disk, an OSError,
NOT_LEADER_OR_FOLLOWER from a closing log) is retried with a capped exponential back-off, as
Kafka's marker channel retries such partitions; write() returns only when every marker is durable.
A partition of a deleted topic is dropped, as Kafka drops it.

In cluster mode (docs/cluster.md) each attempt looks the partition's leader up in the ClusterView:
this broker appends the marker through its own log; a partition led by another broker gets a
WriteTxnMarkers request sent to its leader (RemoteMarkerWriter, the broker's inter-broker client),
and a leader that moved meanwhile answers NOT_LEADER_OR_FOLLOWER, so the next attempt follows it.
A partition without a live leader is retried until one takes it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import ErrorCode, KafkaError
from storage.api import AppendOrigin, ClusterView, LogSource, TopicPartition

from ..tasks import DEFAULT_BACKOFF, Backoff, RateLimitedLog
from .txn_markers import (
    CONSUMER_OFFSETS,
    GroupTxnParticipant,
    RemoteMarkerWriter,
    TxnMarkerEntry,
    end_txn_marker_batch,
)

__all__ = ("CONSUMER_OFFSETS", "GroupTxnParticipant", "MarkerWriter", "TxnMarker")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnMarker:
    """The markers one transaction needs: who, which outcome, where."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    # The epoch of the coordinator shard writing them (None: the writer's own, a single node's 0).
    coordinator_epoch: int | None = None

    def describe(self, tp: TopicPartition) -> str:
        kind = "COMMIT" if self.commit else "ABORT"
        return (f"{kind} marker of '{self.transactional_id}' (producer {self.producer_id} "
                f"epoch {self.producer_epoch}) to {tp}")


class MarkerWriter:
    def __init__(
        self, logs: LogSource, coordinator_epoch: int,
        group: Callable[[], GroupTxnParticipant | None] = lambda: None,
        backoff: Backoff = DEFAULT_BACKOFF,
        cluster: ClusterView | None = None,
        remote: RemoteMarkerWriter | None = None,
    ) -> None:
        self.logs = logs
        self.coordinator_epoch = coordinator_epoch
        # Looked up per transaction: the group coordinator may start after this one.
        self.group = group
        self.backoff = backoff
        self.cluster = cluster  # None: every partition is local
        self.remote = remote

    async def write(self, txn: TxnMarker, written: set[TopicPartition] | None = None) -> None:
        """Write one marker per partition, concurrently, each until it is durable; then tell the
        group coordinator. written collects the partitions done, so a rerun skips them."""
        written = set() if written is None else written
        epoch = self.coordinator_epoch if txn.coordinator_epoch is None else txn.coordinator_epoch
        batch = end_txn_marker_batch(txn.producer_id, txn.producer_epoch, epoch, txn.commit)
        async with asyncio.TaskGroup() as tasks:  # one failing task cancels its siblings
            for tp in sorted(txn.partitions - written):
                tasks.create_task(self._write_one(txn, tp, batch, written))
        group = self.group()
        if group is not None and any(tp.topic == CONSUMER_OFFSETS for tp in txn.partitions):
            done = group.complete_txn(txn.producer_id, None, txn.commit)
            if inspect.isawaitable(done):
                await done

    async def _write_one(
        self, txn: TxnMarker, tp: TopicPartition, batch: bytes, written: set[TopicPartition]
    ) -> None:
        failures, limiter = 0, RateLimitedLog()
        while True:
            try:
                await self._append(txn, tp, batch)
            except KafkaError as exc:
                if not self._retriable(txn, tp, exc):
                    written.add(tp)
                    return
                error: Exception = exc
            except OSError as exc:
                error = exc
            else:
                written.add(tp)
                if failures:
                    log.info("%s written after %d failed attempts", txn.describe(tp), failures)
                return
            failures += 1
            delay = self.backoff.delay_s(failures)
            if limiter.due():
                log.warning("%s failed (attempt %d): %r; the partition's LSO waits on it, "
                            "retrying in %.1f s", txn.describe(tp), failures, error, delay)
            await asyncio.sleep(delay)

    async def _append(self, txn: TxnMarker, tp: TopicPartition, batch: bytes) -> None:
        """One attempt: through the local log, or as a WriteTxnMarkers request to the leader."""
        leader = self._leader(tp)
        if leader is None:
            await self.logs.get_log(tp).append(batch, AppendOrigin.COORDINATOR)
            return
        assert self.remote is not None
        epoch = self.coordinator_epoch if txn.coordinator_epoch is None else txn.coordinator_epoch
        entry = TxnMarkerEntry(producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                               coordinator_epoch=epoch, commit=txn.commit, partitions=(tp,))
        results = await self.remote.write_txn_markers(leader, entry)
        code = results.get(tp, ErrorCode.unknown_server_error)
        if code is not ErrorCode.none:
            raise KafkaError(code, f"broker {leader} answered {code.name}")

    def _leader(self, tp: TopicPartition) -> int | None:
        """The node to send tp's marker to; None for this broker's own log."""
        if self.cluster is None or self.remote is None or self.cluster.leads_everything:
            return None
        found = self.cluster.leader(tp)
        if found is None:
            meta = self.logs.topics.get(tp.topic)
            if meta is None or not 0 <= tp.partition < meta.partitions:
                raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{tp} is not in the cluster")
            # A partition the view has not seen yet (a topic just created): wait for its leader.
            raise KafkaError(ErrorCode.leader_not_available, f"{tp} has no leader known here yet")
        if found.leader == self.cluster.node_id:
            return None
        if found.leader < 0:
            raise KafkaError(ErrorCode.leader_not_available, f"{tp} has no live leader")
        return found.leader

    @staticmethod
    def _retriable(txn: TxnMarker, tp: TopicPartition, exc: KafkaError) -> bool:
        if exc.code is ErrorCode.unknown_topic_or_partition:
            log.info("%s dropped: the topic was deleted", txn.describe(tp))
            return False
        if exc.code.retriable:
            return True
        # Refused for good (a fenced epoch): retrying cannot help and Kafka drops it too.
        log.error("%s refused by the partition: %r", txn.describe(tp), exc)
        return False
