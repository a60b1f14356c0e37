"""Rebuilding a partition's producer state (after a restart, or by a new leader), the same for
every backend: the batches after the newest snapshot are replayed through the producer state, and
open transactions get back the start time a snapshot does not keep. Each backend reads its own
batches and snapshots (storage/log_transactions.py, storage/pg/recovery.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from protocol.control import read_end_txn_marker
from protocol.record_batch import RecordBatchHeader

from .api import AbortedTxn
from .producer_state import ProducerStateEntry, ProducerStateManager

__all__ = ("log_recovered", "replay_batch", "txn_starts_missing")

log = logging.getLogger(__name__)


def replay_batch(state: ProducerStateManager, header: RecordBatchHeader,
                 batch: bytes | memoryview | Callable[[], bytes | memoryview]) -> AbortedTxn | None:
    """Apply one stored batch to state: its bytes, or how to read them (only a marker's are
    read). The aborted transaction its marker ends, if it ends one."""
    marker = None
    # A control batch the cleaner emptied (no record) settles nothing: its transaction ended long
    # before, and is known from a snapshot newer than any cleaned range.
    if header.is_control and header.records_count:
        marker = read_end_txn_marker(batch() if callable(batch) else batch, 0, header)
    completed = state.update(header, marker)
    return completed.aborted_txn() if completed is not None and completed.is_aborted else None


def txn_starts_missing(state: ProducerStateManager) -> list[tuple[ProducerStateEntry, int]]:
    """The open transactions restored without a start time (Kafka's snapshot format has no field
    for it), with the offset of the batch that opened each: its timestamp is the start."""
    return [(e, e.current_txn_first_offset) for e in state.producers.values()
            if e.current_txn_first_offset is not None and e.current_txn_start_ms < 0]


def log_recovered(state: ProducerStateManager, start: int, replayed: int) -> None:
    level = logging.INFO if replayed or state.producers else logging.DEBUG
    log.log(level, "%s: producer state from offset %d, %d batches replayed, %d producers, first unstable "
            "offset %s", state.partition, start, replayed, len(state.producers), state.first_unstable_offset())
