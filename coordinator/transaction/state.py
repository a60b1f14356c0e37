"""The transaction state machine, as Kafka's TransactionState (ids are the persisted status byte).

Rules (every one lives here):
- EMPTY: no transaction; InitProducerId and expiry start here or return here.
- ONGOING: AddPartitionsToTxn / AddOffsetsToTxn added at least one partition.
- PREPARE_COMMIT / PREPARE_ABORT: EndTxn was persisted; markers are being written. Requests for the
  id get CONCURRENT_TRANSACTIONS until the matching COMPLETE_* is persisted.
- COMPLETE_COMMIT / COMPLETE_ABORT: markers written everywhere; a new transaction may begin.
- PREPARE_EPOCH_FENCE: the coordinator is bumping the epoch of an ONGOING transaction (a new
  producer called InitProducerId, or the transaction timed out) before aborting it. Kafka never
  persists it: the record written is the PREPARE_ABORT carrying the bumped epoch.
- DEAD: transactional.id.expiration.ms passed; the id is removed (a tombstone is written).
PREPARE_ABORT may also follow EMPTY / COMPLETE_* (Kafka allows it for transactions V2).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final

__all__ = ("VALID_PREVIOUS_STATES", "IllegalTxnTransition", "TxnState", "check_transition")


class TxnState(Enum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """Kafka's name for the state, as DescribeTransactions and ListTransactions report it."""
        return _NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES: Final = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME: Final = {name: state for state, name in _NAMES.items()}

_S = TxnState
VALID_PREVIOUS_STATES: Final[Mapping[TxnState, frozenset[TxnState]]] = MappingProxyType({
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset(
        {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
    ),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
})


class IllegalTxnTransition(Exception):
    """A bug: the coordinator tried a move the state machine forbids."""


def check_transition(transactional_id: str, old: TxnState, new: TxnState) -> None:
    if old not in VALID_PREVIOUS_STATES[new]:
        raise IllegalTxnTransition(
            f"transaction '{transactional_id}' cannot move from {old.display_name} "
            f"to {new.display_name}"
        )
