"""Per-partition producer state: idempotence, open transactions and the first unstable offset.

Pure and synchronous, after Kafka's ProducerStateManager / ProducerAppendInfo / ProducerStateEntry.
The partition log drives it in three steps for every batch it writes:

    duplicate = state.check_append(header, origin, marker)   # raises KafkaError, mutates nothing
    ... if duplicate: answer with its offsets, write nothing; else assign offsets and write ...
    completed = state.update(header_with_offsets, marker)    # never raises
    if completed and completed.is_aborted: txn_index.append(completed.aborted_txn())

Rules (protocol-notes §7): a retry of one of the last 5 batches of a producer id and epoch is a
duplicate; an older epoch is INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0; the same
epoch must continue at last_seq + 1 (0 after Int32.MAX); a producer with no state may start at any
sequence. A non-transactional batch from a producer with an open transaction is INVALID_TXN_STATE.
A marker with an older epoch is INVALID_PRODUCER_EPOCH; one from an older coordinator epoch is
TRANSACTION_COORDINATOR_FENCED. Recovery replays batch headers through update(), the same code path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from protocol.control import EndTransactionMarker
from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import RecordBatchHeader

from .api import AbortedTxn, AppendOrigin, OpenTransaction

__all__ = (
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "CompletedTxn",
    "ProducerStateEntry",
    "ProducerStateManager",
    "ProducerStateMark",
)

NUM_BATCHES_TO_RETAIN: Final = 5
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
_INT32_MAX: Final = 2**31 - 1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchMetadata:
    """What a retried batch needs to be recognised and answered: sequences, offsets, timestamp."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        # Sequences wrap to 0 after Int32.MAX, so the first one may be "above" the last.
        return (self.last_seq - self.offset_delta) % (_INT32_MAX + 1)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedTxn:
    """A transaction ended by a marker; last_stable_offset is the LSO just after it completed."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
    last_stable_offset: int

    def aborted_txn(self) -> AbortedTxn:
        return AbortedTxn(
            producer_id=self.producer_id,
            first_offset=self.first_offset,
            last_offset=self.last_offset,
            last_stable_offset=self.last_stable_offset,
        )


@dataclass(slots=True, kw_only=True)
class ProducerStateEntry:
    """Mutable state of one producer id on one partition."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batch_metadata: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    # Wall-clock ms when the broker appended the batch that opened the transaction; after a restart
    # that batch's timestamp (replay, or LogTransactions reads it: snapshots do not keep it). -1: unknown.
    current_txn_start_ms: int = -1

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    def find_duplicate_batch(self, header: RecordBatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        for batch in self.batch_metadata:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None

    def maybe_update_producer_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = epoch

    def add_batch(self, header: RecordBatchHeader) -> None:
        self.maybe_update_producer_epoch(header.producer_epoch)
        self.batch_metadata.append(
            BatchMetadata(
                last_seq=header.last_sequence,
                last_offset=header.last_offset,
                offset_delta=header.last_offset_delta,
                timestamp=header.max_timestamp,
            )
        )
        self.last_timestamp = header.max_timestamp


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerStateMark:
    """Copies of the entries an append may change, to restore if its write fails."""

    entries: dict[int, ProducerStateEntry | None]
    ongoing: dict[int, int]
    map_end_offset: int


def _copy_entry(entry: ProducerStateEntry) -> ProducerStateEntry:
    return replace(entry, batch_metadata=deque(entry.batch_metadata, maxlen=NUM_BATCHES_TO_RETAIN))


class ProducerStateManager:
    """All producer ids seen on one partition, their open transactions, and the snapshot offset."""

    def __init__(self, partition: str, *, producer_id_expiration_ms: int = 86_400_000) -> None:
        self.partition = partition
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        # producer id -> first offset of its open transaction; few at once, so min() is cheap.
        self._ongoing: dict[int, int] = {}
        # One past the last offset applied: the offset a snapshot of this state is named after.
        self.map_end_offset = 0

    # -- checks (pure) -------------------------------------------------------------------------

    def check_append(
        self,
        header: RecordBatchHeader,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        marker: EndTransactionMarker | None = None,
    ) -> BatchMetadata | None:
        """Validate a batch before it is written; return the original batch for a duplicate."""
        if not header.has_producer_id:
            if header.is_transactional:
                raise KafkaError(
                    ErrorCode.invalid_record,
                    f"transactional batch to {self.partition} carries no producer id",
                )
            return None
        entry = self.producers.get(header.producer_id)
        if header.is_control:
            if marker is not None:
                self._check_marker(entry, header, marker)
            return None
        if entry is None:
            return None
        if origin is AppendOrigin.CLIENT:
            duplicate = entry.find_duplicate_batch(header)
            if duplicate is not None:
                return duplicate
        self._check_producer_epoch(entry, header.producer_epoch, header.base_offset)
        if origin is AppendOrigin.CLIENT:
            self._check_sequence(entry, header)
        if entry.current_txn_first_offset is not None and not header.is_transactional:
            raise KafkaError(
                ErrorCode.invalid_txn_state,
                f"expected a transactional write from producer {header.producer_id} to "
                f"{self.partition}: its transaction that began at offset "
                f"{entry.current_txn_first_offset} is still open",
            )
        return None

    def _check_producer_epoch(self, entry: ProducerStateEntry, epoch: int, offset: int) -> None:
        if epoch < entry.producer_epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"epoch {epoch} of producer {entry.producer_id} writing to {self.partition} is "
                f"older than its last seen epoch {entry.producer_epoch}: a newer producer with the "
                f"same id has been initialised, or the broker aborted its transaction",
            )

    def _check_sequence(self, entry: ProducerStateEntry, header: RecordBatchHeader) -> None:
        first_seq = header.base_sequence
        if header.producer_epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(
                    ErrorCode.out_of_order_sequence_number,
                    f"producer {entry.producer_id} began epoch {header.producer_epoch} on "
                    f"{self.partition} at sequence {first_seq}; a new epoch must start at 0 "
                    f"(current epoch {entry.producer_epoch})",
                )
            return
        # No epoch means the producer's records were all removed (retention): accept anything.
        if entry.producer_epoch == NO_PRODUCER_EPOCH or _in_sequence(entry.last_seq, first_seq):
            return
        raise KafkaError(
            ErrorCode.out_of_order_sequence_number,
            f"out of order sequence from producer {entry.producer_id} epoch "
            f"{header.producer_epoch} on {self.partition}: got {first_seq}, expected "
            f"{(entry.last_seq + 1) % (_INT32_MAX + 1)} (last written sequence {entry.last_seq} "
            f"at offset {entry.last_data_offset})",
        )

    def _check_marker(
        self,
        entry: ProducerStateEntry | None,
        header: RecordBatchHeader,
        marker: EndTransactionMarker,
    ) -> None:
        if entry is None:
            return
        self._check_producer_epoch(entry, header.producer_epoch, header.base_offset)
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"{marker.control_type.name} marker for producer {entry.producer_id} on "
                f"{self.partition} comes from coordinator epoch {marker.coordinator_epoch}, "
                f"older than the last seen {entry.coordinator_epoch}",
            )

    # -- updates (after the write) --------------------------------------------------------------

    def update(
        self, header: RecordBatchHeader, marker: EndTransactionMarker | None = None,
        append_time_ms: int | None = None,
    ) -> CompletedTxn | None:
        """Apply a written batch (with its assigned offsets); markers may complete a txn.
        append_time_ms is the broker's clock at the append (None when replaying the log)."""
        self.map_end_offset = max(self.map_end_offset, header.last_offset + 1)
        if not header.has_producer_id:
            return None
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerStateEntry(
                producer_id=header.producer_id
            )
        if header.is_control:
            if marker is None:  # a control type we do not know: ignored, as Kafka does
                return None
            return self._append_end_txn_marker(entry, header, marker)
        entry.add_batch(header)
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = header.base_offset
            entry.current_txn_start_ms = header.base_timestamp if append_time_ms is None else append_time_ms
            self._ongoing[entry.producer_id] = header.base_offset
        return None

    def _append_end_txn_marker(
        self, entry: ProducerStateEntry, header: RecordBatchHeader, marker: EndTransactionMarker
    ) -> CompletedTxn | None:
        first_offset = entry.current_txn_first_offset
        entry.maybe_update_producer_epoch(header.producer_epoch)
        entry.current_txn_first_offset = None
        entry.current_txn_start_ms = -1
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = header.max_timestamp
        # A marker without data in this partition changes neither the LSO nor the index.
        if first_offset is None:
            return None
        del self._ongoing[entry.producer_id]
        unstable = self.first_unstable_offset()
        lso = header.base_offset + 1 if unstable is None else min(unstable, header.base_offset + 1)
        return CompletedTxn(
            producer_id=entry.producer_id,
            first_offset=first_offset,
            last_offset=header.base_offset,
            is_aborted=not marker.is_commit,
            last_stable_offset=lso,
        )

    # -- queries --------------------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction, or None when none is open."""
        # Asked on every fetch of every partition; most have no open transaction.
        return min(self._ongoing.values()) if self._ongoing else None

    def last_stable_offset(self, high_watermark: int) -> int:
        unstable = self.first_unstable_offset()
        return high_watermark if unstable is None else min(unstable, high_watermark)

    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of its open transaction (for DescribeProducers)."""
        return dict(self._ongoing)

    def open_transactions(self) -> list[OpenTransaction]:
        """Every open transaction, oldest (the one holding the LSO) first."""
        out = []
        for pid, first_offset in sorted(self._ongoing.items(), key=lambda item: item[1]):
            entry = self.producers[pid]
            start = entry.current_txn_start_ms if entry.current_txn_start_ms >= 0 else entry.last_timestamp
            out.append(OpenTransaction(producer_id=pid, producer_epoch=entry.producer_epoch,
                                       first_offset=first_offset, start_timestamp=start,
                                       last_timestamp=entry.last_timestamp))
        return out

    @property
    def has_open_transactions(self) -> bool:
        return bool(self._ongoing)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    # -- maintenance ----------------------------------------------------------------------------

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget idle producers without an open transaction (producer.id.expiration.ms)."""
        expired = [
            pid
            for pid, entry in self.producers.items()
            if entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        ]
        for pid in expired:
            del self.producers[pid]
        return expired

    def restore(self, entries: Iterable[ProducerStateEntry], map_end_offset: int) -> None:
        """Replace all state with entries loaded from a snapshot taken at map_end_offset."""
        self.producers = {e.producer_id: e for e in entries}
        self._ongoing = {
            e.producer_id: e.current_txn_first_offset
            for e in self.producers.values()
            if e.current_txn_first_offset is not None
        }
        self.map_end_offset = map_end_offset

    def mark(self, producer_ids: Iterable[int]) -> ProducerStateMark:
        """What rollback() needs to undo updates of these producers (before a write)."""
        entries = {}
        for pid in producer_ids:
            entry = self.producers.get(pid)
            entries[pid] = None if entry is None else _copy_entry(entry)
        return ProducerStateMark(entries=entries, ongoing=dict(self._ongoing), map_end_offset=self.map_end_offset)

    def rollback(self, mark: ProducerStateMark) -> None:
        for pid, entry in mark.entries.items():
            if entry is None:
                self.producers.pop(pid, None)
            else:
                self.producers[pid] = _copy_entry(entry)
        self._ongoing = dict(mark.ongoing)
        self.map_end_offset = mark.map_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.restore((), offset)
