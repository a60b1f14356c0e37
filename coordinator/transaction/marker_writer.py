"""Writing the COMMIT / ABORT markers of a transaction to every partition it touched.

Kafka's TransactionMarkerChannelManager sends WriteTxnMarkers to each partition leader; on a
single node the coordinator appends the control batch to each partition log itself. A marker goes
to every added partition, also one that received no data (protocol-notes §4), including the group's
__consumer_offsets partition, after which the group coordinator applies or drops the pending
transactional offsets.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.errors import ErrorCode, KafkaError
from storage.api import AppendOrigin, TopicPartition

__all__ = ("CONSUMER_OFFSETS", "GroupTxnParticipant", "LogSource", "MarkerWriter")

log = logging.getLogger(__name__)
CONSUMER_OFFSETS = "__consumer_offsets"
_ATTEMPTS = 5
_BACKOFF_S = 0.1


class LogSource(Protocol):
    def get_log(self, tp: TopicPartition) -> Any: ...


class GroupTxnParticipant(Protocol):
    """What the group coordinator offers the transaction coordinator (Kafka's
    GroupCoordinator.onTransactionCompleted): after the marker is in the offsets partitions,
    make the producer's pending offsets visible (commit) or drop them (abort). A producer has one
    transaction at a time, so group_ids=None (every group) is exact."""

    def complete_txn(self, producer_id: int, group_ids: Any, commit: bool) -> Any: ...


class MarkerWriter:
    def __init__(
        self, logs: LogSource, coordinator_epoch: int,
        group: Callable[[], GroupTxnParticipant | None] = lambda: None,
    ) -> None:
        self.logs = logs
        self.coordinator_epoch = coordinator_epoch
        # Looked up per transaction: the group coordinator may start after this one.
        self.group = group

    async def write(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: Iterable[TopicPartition],
    ) -> None:
        """Write one marker per partition, concurrently; then tell the group coordinator."""
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        batch = bytes(build_end_txn_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=self.coordinator_epoch,
            control_type=kind,
            timestamp=int(time.time() * 1000),
        ))
        partitions = sorted(partitions)
        await asyncio.gather(*(
            self._write_one(transactional_id, tp, batch, kind) for tp in partitions
        ))
        group = self.group()
        if group is not None and any(tp.topic == CONSUMER_OFFSETS for tp in partitions):
            done = group.complete_txn(producer_id, None, commit)
            if inspect.isawaitable(done):
                await done

    async def _write_one(
        self, transactional_id: str, tp: TopicPartition, batch: bytes, kind: ControlRecordType
    ) -> None:
        for attempt in range(_ATTEMPTS):
            try:
                await self.logs.get_log(tp).append(batch, AppendOrigin.COORDINATOR)
                return
            except KafkaError as exc:
                # The partition refused the marker (deleted topic, fenced epoch): retrying cannot
                # help. Kafka drops these too; anything but a deleted topic is worth an error.
                level = logging.INFO if exc.code is ErrorCode.unknown_topic_or_partition else logging.ERROR
                log.log(level, "%s marker of '%s' not written to %s: %r", kind.name,
                        transactional_id, tp, exc)
                return
            except Exception:  # an I/O failure may pass; the partition's LSO waits on this marker
                log.exception("%s marker of '%s' to %s failed (attempt %d of %d)", kind.name,
                              transactional_id, tp, attempt + 1, _ATTEMPTS)
                await asyncio.sleep(_BACKOFF_S * 2**attempt)
