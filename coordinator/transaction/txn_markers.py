"""Writing one producer's end-transaction markers into this broker's partitions: what a partition
leader does with a WriteTxnMarkers request (Kafka's KafkaApis.handleWriteTxnMarkersRequest).

Shared by the WriteTxnMarkers handler (the Admin client's abortTransaction, and in cluster mode the
transaction coordinators of other brokers) and by this broker's own MarkerWriter. Each marker is
appended with AppendOrigin.COORDINATOR, so the partition's producer state validates it as Kafka's
ProducerAppendInfo.appendEndTxnMarker does: an epoch older than the partition's last for that
producer is INVALID_PRODUCER_EPOCH, a coordinator epoch older than the last marker's is
TRANSACTION_COORDINATOR_FENCED. A marker for a producer the partition does not know, or one with
no open transaction there, is written like any other and changes neither the LSO nor the
.txnindex, as on Kafka. After the markers are in __consumer_offsets partitions the group
coordinator makes the producer's pending offsets visible (commit) or drops them (abort).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.errors import ErrorCode, KafkaError
from storage.api import AppendOrigin, LogSource, TopicPartition

__all__ = ("CONSUMER_OFFSETS", "GroupTxnParticipant", "RemoteMarkerWriter", "TxnMarkerEntry", "end_txn_marker_batch",
           "write_txn_markers")

CONSUMER_OFFSETS = "__consumer_offsets"


class GroupTxnParticipant(Protocol):
    """What the group coordinator offers the transaction coordinator (Kafka's
    GroupCoordinator.onTransactionCompleted): after the marker is in the offsets partitions,
    make the producer's pending offsets visible (commit) or drop them (abort). A producer has one
    transaction at a time, so group_ids=None (every group) is exact."""

    def complete_txn(
        self, producer_id: int, group_ids: Collection[str] | None, commit: bool,
    ) -> Awaitable[None] | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnMarkerEntry:
    """One marker of a WriteTxnMarkers request (Kafka's TxnMarkerEntry)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]


class RemoteMarkerWriter(Protocol):
    """Sends a marker to the broker leading its partitions (cluster mode: a WriteTxnMarkers
    request over the inter-broker connection). Raises OSError or a retriable KafkaError when the
    request got no answer."""

    async def write_txn_markers(self, node_id: int, entry: TxnMarkerEntry) -> Mapping[TopicPartition, ErrorCode]: ...


def end_txn_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool) -> bytes:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytes(build_end_txn_marker(
        producer_id=producer_id, producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch,
        control_type=kind, timestamp=int(time.time() * 1000),
    ))


async def _append(logs: LogSource, tp: TopicPartition, batch: bytes) -> ErrorCode:
    try:
        await logs.get_log(tp).append(batch, AppendOrigin.COORDINATOR)
    except KafkaError as exc:
        return exc.code
    except OSError:
        return ErrorCode.kafka_storage_error
    return ErrorCode.none


async def write_txn_markers(
    logs: LogSource, entry: TxnMarkerEntry, group: Callable[[], GroupTxnParticipant | None] = lambda: None,
) -> Mapping[TopicPartition, ErrorCode]:
    """Append the marker to each partition (concurrently); the error code of each."""
    batch = end_txn_marker_batch(entry.producer_id, entry.producer_epoch, entry.coordinator_epoch, entry.commit)
    codes = await asyncio.gather(*(_append(logs, tp, batch) for tp in entry.partitions))
    results = dict(zip(entry.partitions, codes, strict=True))
    participant = group()
    if participant is not None and any(
            tp.topic == CONSUMER_OFFSETS and code is ErrorCode.none for tp, code in results.items()):
        done = participant.complete_txn(entry.producer_id, None, entry.commit)
        if inspect.isawaitable(done):
            await done
    return results
