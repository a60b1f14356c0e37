"""The transactional bookkeeping of one partition log: producer state, LSO, aborted-txn indexes.

The partition log actor owns one LogTransactions and calls it around every write:

    duplicate = txns.check(batches, origin)      # before the write: raises, or finds a retry
    ... write the batches with assigned offsets ...
    txns.after_write(assigned)                   # update producer state and the .txnindex

plus on_roll() (take a <offset>.snapshot), close(), and recover() at open, which loads the newest
snapshot and replays the batch headers after it, rebuilding the open transactions, the LSO and
the .txnindex entries of that range. Reads use last_stable_offset() and collect_aborted().
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from protocol.control import EndTransactionMarker, read_end_txn_marker
from protocol.record_batch import RecordBatchHeader

from .api import AbortedTxn, AppendOrigin
from .log_segment import LogSegment
from .producer_snapshot import delete_snapshots_after, load_latest_snapshot, write_snapshot
from .producer_state import BatchMetadata, ProducerStateManager
from .transaction_index import TransactionIndexFile, collect_aborted

__all__ = ("LogTransactions", "PendingBatch")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PendingBatch:
    """A batch of an append: its header and, for a control batch, its end-txn marker."""

    header: RecordBatchHeader
    marker: EndTransactionMarker | None


class LogTransactions:
    def __init__(self, partition: str, directory: Path, producer_id_expiration_ms: int) -> None:
        self.directory = directory
        self.state = ProducerStateManager(
            partition, producer_id_expiration_ms=producer_id_expiration_ms
        )
        self.indexes: list[TransactionIndexFile] = []

    # -- appends -----------------------------------------------------------------------------

    @staticmethod
    def pending(
        view: memoryview, headers: Sequence[tuple[int, RecordBatchHeader]]
    ) -> list[PendingBatch]:
        return [
            PendingBatch(h, read_end_txn_marker(view, pos, h) if h.is_control else None)
            for pos, h in headers
        ]

    def check(self, batches: Sequence[PendingBatch], origin: AppendOrigin) -> BatchMetadata | None:
        """Raise KafkaError for a batch the producer state refuses; a retry's original batch."""
        for b in batches:
            duplicate = self.state.check_append(b.header, origin, b.marker)
            if duplicate is not None:
                return duplicate
        return None

    def after_write(self, batches: Sequence[PendingBatch]) -> None:
        """Apply written batches (headers carry their assigned offsets)."""
        for b in batches:
            completed = self.state.update(b.header, b.marker)
            if completed is not None and completed.is_aborted:
                self.indexes[-1].append(completed.aborted_txn())

    # -- segments ------------------------------------------------------------------------------

    def on_new_segment(self, base_offset: int) -> None:
        self.indexes.append(TransactionIndexFile(self._index_path(base_offset), base_offset))

    def on_roll(self, base_offset: int) -> None:
        """A new active segment: snapshot the producer state at its base offset (Kafka's roll)."""
        if self.indexes:
            self.indexes[-1].flush()
        self.state.map_end_offset = base_offset
        write_snapshot(self.directory, self.state)
        self.on_new_segment(base_offset)

    def on_delete_segment(self, base_offset: int) -> None:
        self.indexes = [ix for ix in self.indexes if ix.index.base_offset != base_offset]

    def close(self, log_end_offset: int) -> None:
        """Clean shutdown: a snapshot at the log end makes the next start replay nothing."""
        if self.indexes:
            self.indexes[-1].flush()
        self.state.map_end_offset = log_end_offset
        write_snapshot(self.directory, self.state)

    def _index_path(self, base_offset: int) -> Path:
        return self.directory / f"{base_offset:020d}.txnindex"

    # -- reads ---------------------------------------------------------------------------------

    def last_stable_offset(self, high_watermark: int) -> int:
        return self.state.last_stable_offset(high_watermark)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        return collect_aborted([ix.index for ix in self.indexes], fetch_offset, upper_bound)

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        return self.state.remove_expired_producers(now_ms)

    # -- recovery ------------------------------------------------------------------------------

    def recover(self, segments: Sequence[LogSegment], log_end_offset: int) -> None:
        """Load the snapshot at or below the log end, then replay the batches after it."""
        delete_snapshots_after(self.directory, log_end_offset)
        self.indexes = [TransactionIndexFile.open(self.directory, s.base_offset) for s in segments]
        start = load_latest_snapshot(self.directory, self.state, log_end_offset)
        start = segments[0].base_offset if start is None else start
        if start < segments[0].base_offset:
            start = segments[0].base_offset
        self.state.map_end_offset = start
        # Entries at or after the replay start are rebuilt from the log: a crash may have left
        # the .txnindex behind the log, or ahead of a truncated tail.
        for ix in self.indexes:
            ix.truncate_to(start)
        replayed = self._replay(segments, start)
        self.state.map_end_offset = log_end_offset
        level = logging.INFO if replayed or self.state.producers else logging.DEBUG
        log.log(level, "%s: producer state from offset %d, %d batches replayed, %d producers, "
                "first unstable offset %s",
                 self.state.partition, start, replayed, len(self.state.producers),
                 self.state.first_unstable_offset())

    def _replay(self, segments: Sequence[LogSegment], start: int) -> int:
        replayed = 0
        for i, seg in enumerate(segments):
            if seg.next_offset <= start:
                continue
            position = seg.index.lookup(start) if seg.base_offset <= start else 0
            for loc in seg.iter_from(position):
                h = loc.header
                if h.last_offset < start:
                    continue
                marker = None
                if h.is_control:
                    marker = read_end_txn_marker(seg.read_range(loc.position, loc.position + h.size))
                completed = self.state.update(h, marker)
                if completed is not None and completed.is_aborted:
                    self.indexes[i].append(completed.aborted_txn())
                replayed += 1
        return replayed
