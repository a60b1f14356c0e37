"""What a new leader rebuilds from the database before it serves a partition: producer state from
the newest snapshot plus the batch headers after it, and the aborted-transaction index. The same
shared code as local recovery (storage/producer_state.py, storage/transaction_index.py), so
idempotent dedup and read_committed stay exact across a failover.
"""

from __future__ import annotations

import logging

from protocol.errors import CorruptRecordError
from protocol.record_batch import RecordBatchHeader

from ..producer_recovery import log_recovered, replay_batch, txn_starts_missing
from ..producer_snapshot import decode_snapshot
from ..producer_state import ProducerStateManager
from ..transaction_index import TransactionIndex
from .partition_store import PartitionStore

__all__ = ("rebuild",)

log = logging.getLogger(__name__)


async def rebuild(
    store: PartitionStore, state: ProducerStateManager, log_start_offset: int, next_offset: int
) -> TransactionIndex:
    """Fill state as of next_offset; return the aborted transactions from log_start_offset on.

    The aborted index is read whole from `aborted_txns` (each entry was inserted with its marker),
    so the replay only rebuilds producer state."""
    start = await _load_snapshot(store, state, next_offset)
    start = max(start, log_start_offset)
    state.map_end_offset = start
    replayed = 0
    async for head in store.replay_headers(start, next_offset):
        replay_batch(state, RecordBatchHeader.parse(head), head)  # the aborted index is read whole below
        replayed += 1
    state.map_end_offset = next_offset
    await _restore_txn_start_times(store, state)
    index = TransactionIndex(0, await store.aborted_txns(log_start_offset))
    log_recovered(state, start, replayed)
    return index


async def _load_snapshot(store: PartitionStore, state: ProducerStateManager, upto: int) -> int:
    """Restore the newest readable snapshot at or below upto; its offset, or 0 with none."""
    async for offset, data in store.snapshots(upto):
        try:
            entries = decode_snapshot(data)
        except CorruptRecordError as exc:
            log.warning("%s: producer snapshot at offset %d is unreadable (%s); trying an older one",
                        state.partition, offset, exc)
            continue
        state.restore(entries, offset)
        return offset
    state.truncate_fully_and_start_at(0)
    return 0


async def _restore_txn_start_times(store: PartitionStore, state: ProducerStateManager) -> None:
    """A snapshot keeps no start time for an open transaction: take the timestamp of the batch
    that opened it (one lookup per open transaction), as local recovery does."""
    for entry, first in txn_starts_missing(state):
        head = await store.batch_at(first)
        if head is not None:
            entry.current_txn_start_ms = RecordBatchHeader.parse(head).base_timestamp
