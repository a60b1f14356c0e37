"""TxnShard: the transactional ids of one __transaction_state partition, as a pure state machine.

Kafka's CoordinatorShard shape: each operation checks the request against the ids' state
(TransactionMetadata, end_txn.py) and returns a CoordinatorResult -- the __transaction_state
records to persist, the answer (an ApiError for a refusal) and the effects to run once the
records are durable (write the markers, count the outcome, a log line) -- and changes nothing.
The runtime persists the records and replays them here; loading the partition replays the same
records through the same replay(), so recovery and live traffic share one path.

Producer ids are allocated by the caller beforehand (an allocation may need I/O): producer_ids_*
say how many an operation may take, and the operation pops them from the list it is given.
Which partition an id belongs to, and whether this broker serves it, is the coordinator's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import wraps
from typing import Concatenate, ParamSpec, TypeAlias, TypeVar

from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..runtime import ApiError, CoordinatorResult
from .end_txn import decide_end_txn
from .log import TxnLogEntry
from .marker_writer import TxnMarker
from .messages import Complete, CountOutcome, LogLine, SendMarkers, TxnEffect
from .metadata import ProducerIdAndEpoch, TransactionMetadata, TxnTransition, is_epoch_exhausted
from .outcomes import AbortCause
from .state import TxnState

__all__ = ("TxnResult", "TxnShard", "markers_of")

T = TypeVar("T")
P = ParamSpec("P")
TxnResult: TypeAlias = CoordinatorResult[TxnLogEntry, TxnEffect, T]


def _refusals(
    op: Callable[Concatenate[TxnShard, P], TxnResult[T]],
) -> Callable[Concatenate[TxnShard, P], TxnResult[T]]:
    """The shard's rules raise KafkaError; an operation answers it as an ApiError value."""

    def refusing(shard: TxnShard, /, *args: P.args, **kwargs: P.kwargs) -> TxnResult[T]:
        try:
            return op(shard, *args, **kwargs)
        except KafkaError as exc:
            return CoordinatorResult(response=ApiError.of(exc))

    return wraps(op)(refusing)


def _entry(transactional_id: str, t: TxnTransition) -> TxnLogEntry:
    return TxnLogEntry(transactional_id=transactional_id, transition=t)


def markers_of(transactional_id: str, t: TxnTransition) -> TxnMarker:
    """The markers a PREPARE_COMMIT / PREPARE_ABORT needs, to be written by this shard's epoch."""
    return TxnMarker(transactional_id=transactional_id, producer_id=t.producer_id,
                     producer_epoch=t.producer_epoch, commit=t.state is TxnState.PREPARE_COMMIT,
                     partitions=t.topic_partitions)


class TxnShard:
    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.transactions: dict[str, TransactionMetadata] = {}

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        md = self.transactions.get(transactional_id)
        return None if md is None or md.state is TxnState.DEAD else md

    def _known(self, transactional_id: str) -> TransactionMetadata:
        md = self.get(transactional_id)
        if md is None:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping,
                f"transactional id '{transactional_id}' is unknown to the coordinator; "
                "call InitProducerId first",
            )
        return md

    # -- persisting and replaying ------------------------------------------------------------------

    def begin(self, records: Sequence[TxnLogEntry]) -> None:
        for record in records:
            md = self.transactions.get(record.transactional_id)
            if md is not None and record.transition is not None:
                md.mark_pending(record.transition)

    def revert(self, records: Sequence[TxnLogEntry]) -> None:
        for record in records:
            md = self.transactions.get(record.transactional_id)
            if md is not None:
                md.cancel_pending()

    def replay(self, record: TxnLogEntry, offset: int | None = None) -> None:
        """Apply a persisted record (its offset is not needed): a live write completes its pending transition (checked
        against the state machine); a loaded one is adopted as is; a tombstone removes the id."""
        t, transactional_id = record.transition, record.transactional_id
        if t is None or t.state is TxnState.DEAD:
            self.transactions.pop(transactional_id, None)
            return
        md = self.transactions.get(transactional_id)
        if md is None:
            self.transactions[transactional_id] = TransactionMetadata(transactional_id, t)
        elif md.pending_state is not None:
            md.complete_transition(t)
        else:
            md.load(t)

    # -- InitProducerId ------------------------------------------------------------------------------

    def producer_ids_for_init(self, transactional_id: str) -> int:
        """How many new producer ids init_producer_id may take: one for an id it does not know,
        one for a rotation away from an exhausted epoch."""
        md = self.get(transactional_id)
        return 1 if md is None or is_epoch_exhausted(md.producer_epoch) else 0

    @_refusals
    def init_producer_id(
        self, transactional_id: str, txn_timeout_ms: int, expected: ProducerIdAndEpoch | None, *,
        new_ids: list[int], now_ms: int, server_tv: int,
    ) -> TxnResult[ProducerIdAndEpoch]:
        md = self.get(transactional_id)
        if md is None:  # not installed here: its first record creates it when replayed
            md = TransactionMetadata.new(transactional_id, new_ids.pop(), txn_timeout_ms, now_ms)
        old_epoch = md.producer_epoch
        t = md.prepare_init_producer_id(txn_timeout_ms=txn_timeout_ms, expected=expected, now_ms=now_ms,
                                        new_producer_id=new_ids.pop, server_tv=server_tv)
        records = (_entry(transactional_id, t),)
        if t.state is TxnState.PREPARE_ABORT:
            return CoordinatorResult(
                response=ApiError(ErrorCode.concurrent_transactions,
                                  f"the open transaction of the previous producer of '{transactional_id}' "
                                  "is being aborted; retry InitProducerId"),
                records=records,
                effects=(CountOutcome(False, AbortCause.FENCING),
                         LogLine(logging.WARNING, f"'{transactional_id}': InitProducerId fenced producer "
                                 f"{t.producer_id} epoch {old_epoch} with an open transaction; aborting "
                                 f"it with epoch {t.producer_epoch}"),
                         SendMarkers(markers_of(transactional_id, t))),
            )
        return CoordinatorResult(
            response=ProducerIdAndEpoch(producer_id=t.producer_id, epoch=t.producer_epoch), records=records,
            effects=(LogLine(logging.INFO, f"'{transactional_id}': producer id {t.producer_id} epoch "
                             f"{t.producer_epoch} initialised"),))

    # -- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------------

    @_refusals
    def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int,
        partitions: Iterable[TopicPartition], *, tv2: bool, now_ms: int,
    ) -> TxnResult[None]:
        md = self._known(transactional_id)
        t = md.prepare_add_partitions(producer_id=producer_id, producer_epoch=producer_epoch,
                                      partitions=partitions, now_ms=now_ms, client_tv=2 if tv2 else 0)
        return CoordinatorResult(response=None, records=() if t is None else (_entry(transactional_id, t),))

    # -- EndTxn ----------------------------------------------------------------------------------------

    def producer_ids_for_end_txn(self, transactional_id: str, tv2: bool) -> int:
        """One when a V2 EndTxn would exhaust the epoch: the producer moves to a new id. That is
        an open transaction's end, and also an abort with nothing open (Empty, Complete*), which
        bumps the epoch too."""
        md = self.get(transactional_id)
        exhausted = md is not None and is_epoch_exhausted(md.producer_epoch) and not md.state.is_preparing
        return 1 if tv2 and exhausted else 0

    @_refusals
    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, *, commit: bool, tv2: bool,
        new_ids: list[int], now_ms: int,
    ) -> TxnResult[ProducerIdAndEpoch]:
        md = self._known(transactional_id)
        decision = decide_end_txn(md, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                                  tv2=tv2, now_ms=now_ms, new_producer_id=new_ids.pop)
        t = decision.transition
        if t is None:  # a retry of a completed EndTxn
            return CoordinatorResult(response=decision.result)
        # a V2 abort with nothing added has no marker to write: it completes at once
        then = SendMarkers(markers_of(transactional_id, t)) if t.topic_partitions else Complete(
            transactional_id, t.producer_epoch)
        return CoordinatorResult(response=decision.result, records=(_entry(transactional_id, t),),
                                 effects=(CountOutcome(commit), then))

    @_refusals
    def complete(self, transactional_id: str, producer_epoch: int, *, now_ms: int) -> TxnResult[None]:
        """COMPLETE_* once the markers of the transaction ended at producer_epoch are written;
        nothing if that transaction is no longer the one being completed."""
        md = self.transactions.get(transactional_id)
        if md is None or not md.state.is_preparing or md.producer_epoch != producer_epoch:
            return CoordinatorResult(response=None)
        t = md.prepare_complete(now_ms)
        return CoordinatorResult(response=None, records=(_entry(transactional_id, t),),
                                 effects=(LogLine(logging.DEBUG, f"'{transactional_id}': {t.state.display_name}"),))

    # -- timers ----------------------------------------------------------------------------------------

    def timed_out(self, now_ms: int) -> list[str]:
        return [i for i, md in self.transactions.items() if md.is_timed_out(now_ms)]

    @_refusals
    def abort_timed_out(self, transactional_id: str, *, now_ms: int, server_tv: int) -> TxnResult[None]:
        """Abort an open transaction past its timeout with a bumped epoch, fencing its producer."""
        md = self._known(transactional_id)
        t = md.prepare_timeout_abort(now_ms, server_tv)
        return CoordinatorResult(response=None, records=(_entry(transactional_id, t),), effects=(
            LogLine(logging.WARNING, f"transaction of '{transactional_id}' (producer {t.producer_id} epoch "
                    f"{md.producer_epoch}) timed out after {t.txn_timeout_ms} ms; aborting it, producer "
                    f"epoch is now {t.producer_epoch}"),
            CountOutcome(False, AbortCause.TIMEOUT),
            SendMarkers(markers_of(transactional_id, t))))

    def expired(self, now_ms: int, expiration_ms: int) -> list[str]:
        return [i for i, md in self.transactions.items() if md.is_expired(now_ms, expiration_ms)]

    @_refusals
    def expire(self, transactional_id: str, *, expiration_ms: int) -> TxnResult[None]:
        """Remove an id idle past transactional.id.expiration.ms (its record is a tombstone)."""
        t = self._known(transactional_id).prepare_dead()
        return CoordinatorResult(response=None, records=(_entry(transactional_id, t),), effects=(
            LogLine(logging.INFO, f"transactional id '{transactional_id}' expired after {expiration_ms} ms idle"),))
