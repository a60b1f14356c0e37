"""EndTxn decisions for both transaction protocols, as Kafka's TransactionCoordinator.endTransaction.

Transactions V1 (EndTxn v0-4): the epoch stays; a retry is recognised by the state (COMPLETE_COMMIT
and a commit again: NONE), an EndTxn with nothing open is INVALID_TXN_STATE.
Transactions V2 (EndTxn v5, KIP-890): every EndTxn bumps the epoch, the markers carry the bumped
epoch (so a zombie of the old one cannot write into the next transaction) and the answer returns
it; an epoch that would exhaust moves the producer to a new id at epoch 0 once the markers are
written. Whether an ended transaction's epoch is "current" depends on the protocol the transaction
used (the metadata's client_transaction_version, not the request's): under V2 the same state and
epoch mean the *next* transaction, and a retry is the request with epoch = current - 1
(retry_on_epoch_bump) or, after a rotation, the old id at the last epoch (retry_on_overflow). An
abort with nothing open succeeds under V2 (the producer may abort before sending anything) and
still bumps the epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import ErrorCode, KafkaError

from .metadata import (
    MAX_EPOCH,
    NO_PRODUCER_ID,
    ProducerIdAndEpoch,
    TransactionMetadata,
    TxnChanges,
    TxnTransition,
    is_epoch_exhausted,
)
from .state import TxnState

__all__ = ("EndTxnDecision", "decide_end_txn")

_S = TxnState


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnDecision:
    # What to persist: PREPARE_COMMIT / PREPARE_ABORT; None answers at once (a retry).
    transition: TxnTransition | None
    # The producer id and epoch EndTxn v5 answers with: the ones to use from now on.
    result: ProducerIdAndEpoch


def _no_new_id() -> int:
    raise AssertionError("no producer id was allocated for an exhausted epoch")


def decide_end_txn(
    md: TransactionMetadata, *, producer_id: int, producer_epoch: int, commit: bool, tv2: bool,
    now_ms: int, new_producer_id: Callable[[], int] = _no_new_id,
) -> EndTxnDecision:
    """Raise KafkaError, or say what to persist and answer. tv2: the request is EndTxn v5+."""
    if tv2 and _in_transition(md):
        # Kafka's V2 path checks this before the producer id and epoch: while the last
        # transaction's markers are written the epoch has been bumped already, and a producer
        # that got it and ends its next (empty) transaction at once must wait, not be fenced
        raise md._concurrent("EndTxn")
    md_tv2 = md.client_transaction_version >= 2
    bumped = md_tv2 and md.producer_epoch == producer_epoch + 1
    overflowed = (md_tv2 and md.last_producer_id == producer_id and producer_epoch == MAX_EPOCH - 1
                  and md.producer_epoch == 0)
    if md.producer_id != producer_id and not overflowed:
        raise KafkaError(
            ErrorCode.invalid_producer_id_mapping,
            f"producer id {producer_id} does not belong to transactional id "
            f"'{md.transactional_id}' (its producer id is {md.producer_id})",
        )
    if not _valid_epoch(md, producer_epoch, md_tv2 and tv2, bumped or overflowed):
        raise md._fenced(producer_epoch)
    if md.pending_state is not None:
        raise md._concurrent("EndTxn")
    current = ProducerIdAndEpoch(producer_id=md.producer_id, epoch=md.producer_epoch)
    retry = bumped or overflowed if md_tv2 and tv2 else True  # a V1 request: a retry by state alone
    target = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
    match md.state:
        case _S.ONGOING:
            return _prepare(md, target, tv2, now_ms, new_producer_id, empty=False)
        case _S.PREPARE_COMMIT | _S.PREPARE_ABORT if md.state is target:
            raise md._concurrent("EndTxn")
        case _S.COMPLETE_COMMIT if commit and retry:
            return EndTxnDecision(transition=None, result=current)
        case _S.COMPLETE_ABORT if not commit and retry and (md_tv2 or not tv2):
            return EndTxnDecision(transition=None, result=current)
        case _S.EMPTY | _S.COMPLETE_COMMIT | _S.COMPLETE_ABORT if not commit and tv2 and not (md_tv2 and retry):
            return _prepare(md, target, tv2, now_ms, new_producer_id, empty=True)
    raise _invalid_end_txn(md, commit)


def _in_transition(md: TransactionMetadata) -> bool:
    """A write is pending, or markers are being written (Kafka's PrepareCommit/PrepareAbort with
    the pending CompleteCommit/CompleteAbort it sets before sending them), but not an epoch fence."""
    if md.pending_state is not None:
        return md.pending_state is not _S.PREPARE_EPOCH_FENCE
    return md.state.is_preparing


def _valid_epoch(md: TransactionMetadata, epoch: int, v2: bool, is_retry: bool) -> bool:
    """v2: a V2 request (EndTxn v5+) on a V2 transaction; any other request must name the current
    epoch exactly, as Kafka's endTransactionWithTV1 checks a client's request."""
    if not v2:
        return epoch == md.producer_epoch
    if md.state.is_preparing:
        return is_retry
    if md.state.is_complete:
        # the same epoch begins the next (empty) transaction; one less is a retry
        return is_retry or epoch == md.producer_epoch
    return epoch == md.producer_epoch


def _prepare(
    md: TransactionMetadata, target: TxnState, tv2: bool, now_ms: int,
    new_producer_id: Callable[[], int], *, empty: bool,
) -> EndTxnDecision:
    if not tv2:
        t = md._transition(target, txn_last_update_timestamp=now_ms)
        return EndTxnDecision(transition=t, result=ProducerIdAndEpoch(producer_id=md.producer_id,
                                                                      epoch=md.producer_epoch))
    next_id = new_producer_id() if is_epoch_exhausted(md.producer_epoch) else NO_PRODUCER_ID
    # A timed-out abort may have fenced the epoch to MAX_EPOCH already; the producer moves to
    # next_id at epoch 0, and the old id's epoch never goes past the highest a short holds.
    epoch = min(md.producer_epoch + 1, MAX_EPOCH)
    changes = TxnChanges(producer_epoch=epoch, last_producer_epoch=md.producer_epoch, next_producer_id=next_id,
                         client_transaction_version=2, txn_last_update_timestamp=now_ms)
    if empty:  # an abort with nothing added has no start of its own: Kafka uses the time of the abort
        changes.update({"txn_start_timestamp": now_ms, "topic_partitions": frozenset()})
    t = md._transition(target, **changes)
    result = (ProducerIdAndEpoch(producer_id=next_id, epoch=0) if next_id != NO_PRODUCER_ID
              else ProducerIdAndEpoch(producer_id=md.producer_id, epoch=epoch))
    return EndTxnDecision(transition=t, result=result)


def _invalid_end_txn(md: TransactionMetadata, commit: bool) -> KafkaError:
    verb = "commit" if commit else "abort"
    if md.state is _S.EMPTY:
        detail = "no transaction is open (nothing was added since the last one ended)"
    elif md.state in (_S.COMPLETE_COMMIT, _S.PREPARE_COMMIT):
        detail = "the last transaction was committed"
    elif md.state in (_S.COMPLETE_ABORT, _S.PREPARE_ABORT):
        detail = "the last transaction was aborted"
    else:
        detail = f"it is {md.state.display_name}"
    return KafkaError(
        ErrorCode.invalid_txn_state,
        f"cannot {verb} the transaction of '{md.transactional_id}': {detail}",
    )
