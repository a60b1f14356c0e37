"""Transactions as the cleaner walks a log in offset order (Kafka's CleanedTransactionMetadata).

Aborted transactions come from the .txnindex (each with its first offset and its ABORT marker's
offset). Walking batches in order, a transactional batch of a producer whose aborted transaction
has begun is discardable; a COMMIT marker is discardable once no batch of its transaction was seen
in this pass (they were cleaned away earlier); an ABORT marker likewise, and while it is kept its
index entry goes into the cleaned segment's .txnindex.

A transaction ends at its marker's offset even where the walk never meets the marker: the offset
map's walk starts at the first dirty segment, past the markers of older aborted transactions, and
a producer's next transaction (committed) must not be taken for the aborted one.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from protocol.control import ControlRecordType
from protocol.record_batch import RecordBatchHeader

from ..api import AbortedTxn

__all__ = ("CleanedTransactions",)


class CleanedTransactions:
    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # min-heap by first offset
        self._aborting: dict[int, tuple[AbortedTxn, bool]] = {}  # pid -> (txn, a batch was seen)
        self._committing: set[int] = set()
        self.kept_aborted: list[AbortedTxn] = []  # index entries of the ABORT markers kept

    def add_aborted(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            heapq.heappush(self._pending, (txn.first_offset, txn.last_offset, txn))

    def _begin_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            if self._aborting_at(txn.producer_id, txn.first_offset) is None:
                self._aborting[txn.producer_id] = (txn, False)

    def _aborting_at(self, producer_id: int, offset: int) -> tuple[AbortedTxn, bool] | None:
        """The producer's aborted transaction still open at offset (one whose marker lies before
        offset is over, whether or not this walk met the marker)."""
        aborting = self._aborting.get(producer_id)
        if aborting is not None and aborting[0].last_offset < offset:
            del self._aborting[producer_id]
            return None
        return aborting

    def on_batch(self, header: RecordBatchHeader) -> bool:
        """A data batch: True if it belongs to an aborted transaction (all its records go)."""
        self._begin_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        aborting = self._aborting_at(header.producer_id, header.base_offset)
        if aborting is not None:
            self._aborting[header.producer_id] = (aborting[0], True)
            return True
        self._committing.add(header.producer_id)
        return False

    def on_marker(self, header: RecordBatchHeader, control_type: int | None) -> bool:
        """A control batch (control_type None: an already emptied one): True if it may be discarded
        as far as its transaction goes (its delete horizon decides the rest)."""
        self._begin_up_to(header.last_offset)
        pid = header.producer_id
        if control_type is None:
            return True
        if control_type == ControlRecordType.ABORT:
            aborting = self._aborting_at(pid, header.base_offset)
            self._aborting.pop(pid, None)
            if aborting is not None and aborting[1]:
                self.kept_aborted.append(aborting[0])
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            seen = pid in self._committing
            self._committing.discard(pid)
            return not seen
        return False
