"""The transactional bookkeeping of one partition log: producer state, LSO, aborted-txn indexes.

The partition log actor owns one LogTransactions and calls it around every write:

    (storage/sequenced_log.py checks the batches against txns.state and gives them offsets)
    ... write the batches with assigned offsets ...
    txns.after_write(assigned, now_ms)           # update producer state and the .txnindex

An append is all or nothing: mark() before the write and rollback(mark) if any write fails
restore the producer entries and cut the .txnindex back. Rolls and snapshots are split into a
part that runs on the event loop (encoding the state) and file work that the partition log runs
on a worker thread (roll_files, write_snapshot). recover() at open loads the newest snapshot and
replays the batch headers after it, rebuilding the open transactions, the LSO and the .txnindex
entries of that range. Reads use last_stable_offset() and collect_aborted().
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .api import AbortedTxn
from .fs import LOCAL_FS, FileSystem
from .log_append import PendingBatch
from .log_segment import LogSegment
from .producer_recovery import log_recovered, replay_batch, txn_starts_missing
from .producer_snapshot import (
    delete_snapshots_after,
    delete_snapshots_between,
    encode_snapshot,
    load_latest_snapshot,
    snapshot_path,
)
from .producer_state import ProducerStateManager, ProducerStateMark
from .transaction_index import TransactionIndexFile, collect_aborted

__all__ = ("LogTransactions", "TxnMark")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TxnMark:
    state: ProducerStateMark | None  # None: the append cannot fail after changing the state
    index_entries: int


class LogTransactions:
    def __init__(
        self, partition: str, directory: Path, producer_id_expiration_ms: int, fs: FileSystem = LOCAL_FS
    ) -> None:
        self.directory = directory
        self.state = ProducerStateManager(
            partition, producer_id_expiration_ms=producer_id_expiration_ms
        )
        self.indexes: list[TransactionIndexFile] = []
        self._fs = fs
        # Where the last recovery started replaying, and how many batches it replayed.
        self.recovery_start_offset = 0
        self.recovery_replayed = 0

    # -- appends -----------------------------------------------------------------------------

    def mark(self, batches: Sequence[PendingBatch]) -> TxnMark:
        # after_write changes the producer state and then may fail only on a .txnindex write,
        # which only a marker makes; a failed segment write comes before any change. So only
        # appends with markers pay for copies of their producers' entries.
        if all(b.marker is None for b in batches):
            return TxnMark(None, len(self.indexes[-1]))
        pids = {b.header.producer_id for b in batches if b.header.has_producer_id}
        return TxnMark(self.state.mark(pids), len(self.indexes[-1]))

    def after_write(self, batches: Sequence[PendingBatch], now_ms: int) -> None:
        """Apply written batches (headers carry their assigned offsets), appended at now_ms. On
        OSError (a .txnindex write) the caller undoes everything with rollback(mark)."""
        for b in batches:
            completed = self.state.update(b.header, b.marker, now_ms)
            if completed is not None and completed.is_aborted:
                self.indexes[-1].append(completed.aborted_txn())

    def rollback(self, mark: TxnMark) -> None:
        self.indexes[-1].truncate_to_entries(mark.index_entries)
        if mark.state is not None:
            self.state.rollback(mark.state)

    # -- segments and snapshots -------------------------------------------------------------------

    def snapshot(self, offset: int) -> tuple[Path, bytes]:
        """The producer state as of offset (the log end), encoded on the owner task so a worker
        thread can write it while the state moves on."""
        self.state.map_end_offset = offset
        return snapshot_path(self.directory, offset), encode_snapshot(self.state.producers.values())

    def write_snapshot(self, path: Path, data: bytes, keep_from: int) -> None:
        """Worker thread: write a periodic snapshot, then drop those it supersedes above keep_from.

        Not fsynced: an fsync on ext4 (data=ordered) commits the journal and with it writes back
        every dirty page of the file system, seconds' worth under load. The snapshot only saves
        replay; one lost to a power failure fails its CRC at the next start and the one at the
        segment's base (fsynced at the roll) is used, as Kafka, which snapshots at rolls only."""
        self._fs.write_atomically(path, data, sync=False)
        offset = int(path.name.split(".")[0])
        delete_snapshots_between(self.directory, keep_from, offset, self._fs)

    def roll_files(self, base_offset: int, snapshot: tuple[Path, bytes]) -> TransactionIndexFile:
        """Worker thread, at a roll (Kafka's roll): flush the old .txnindex, create the new
        segment's one and snapshot the producer state at its base offset. The caller deletes the
        new segment's files (.txnindex and .snapshot included) if this raises."""
        if self.indexes:
            self.indexes[-1].flush()
        ix = TransactionIndexFile(self._index_path(base_offset), base_offset, self._fs)
        ix.create()
        try:
            self._fs.write_atomically(*snapshot)
        except OSError:
            ix.close()
            raise
        return ix

    def on_roll(self, ix: TransactionIndexFile) -> None:
        self.indexes.append(ix)

    def on_delete_segment(self, base_offset: int) -> None:
        for ix in self.indexes:
            if ix.index.base_offset == base_offset:
                ix.close()
        self.indexes = [ix for ix in self.indexes if ix.index.base_offset != base_offset]

    def close(self, log_end_offset: int) -> None:
        """Clean shutdown: a snapshot at the log end makes the next start replay nothing."""
        if self.indexes:
            self.indexes[-1].flush()
        self._fs.write_atomically(*self.snapshot(log_end_offset))
        for ix in self.indexes:
            ix.close()

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
        self.indexes = [TransactionIndexFile.open(self.directory, s.base_offset, self._fs) for s in segments]
        start = load_latest_snapshot(self.directory, self.state, log_end_offset)
        start = segments[0].base_offset if start is None else start
        if start < segments[0].base_offset:
            start = segments[0].base_offset
        self.state.map_end_offset = start
        # Entries at or after the replay start are rebuilt from the log: a crash may have left
        # the .txnindex behind the log, or ahead of a truncated tail.
        for ix in self.indexes:
            ix.truncate_to(start)
        self.indexes[-1].create()  # at open, not when the first abort arrives on the event loop
        replayed = self._replay(segments, start)
        self._restore_txn_start_times(segments)
        self.recovery_start_offset, self.recovery_replayed = start, replayed
        self.state.map_end_offset = log_end_offset
        log_recovered(self.state, start, replayed)

    def _restore_txn_start_times(self, segments: Sequence[LogSegment]) -> None:
        """A snapshot keeps no start time for an open transaction (Kafka's format has no field):
        take the timestamp of the batch that opened it, one index lookup per open transaction."""
        for entry, first in txn_starts_missing(self.state):
            seg = next((s for s in reversed(segments) if s.base_offset <= first), None)
            loc = None if seg is None else seg.find(first)
            if loc is not None and loc.header.base_offset == first:
                entry.current_txn_start_ms = loc.header.base_timestamp

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
                aborted = replay_batch(self.state, h, partial(seg.read_range, loc.position, loc.position + h.size))
                if aborted is not None:
                    self.indexes[i].append(aborted)
                replayed += 1
        return replayed
