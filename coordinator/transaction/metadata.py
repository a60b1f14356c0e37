"""TransactionMetadata: one transactional id's state, decided purely, applied after persisting.

The coordinator actor calls a prepare_* method, which checks the request against the state and
returns a TxnTransition (the complete next state) without mutating anything, or raises KafkaError.
The actor marks the transition pending, appends it to __transaction_state, and only then calls
complete_transition(); loading the log at start-up applies the same records with load().
Decisions follow Kafka's TransactionCoordinator and TransactionMetadata. Under transactions V1 the
epoch is constant across transactions (only InitProducerId and the coordinator's fencing bump it);
under V2 (KIP-890) every EndTxn bumps it too: end_txn.py decides EndTxn for both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypedDict, TypeVar, Unpack, cast

from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from .state import TxnState, check_transition

__all__ = ("FenceInfo", "ProducerIdAndEpoch", "TransactionMetadata", "TxnChanges", "TxnTransition")

NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
MAX_EPOCH: Final = 2**15 - 1
T = TypeVar("T")


def is_epoch_exhausted(epoch: int) -> bool:
    # MAX - 1: the coordinator keeps one epoch in reserve to fence a zombie of the last one.
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnTransition:
    """The whole next state of a transactional id: what __transaction_state stores."""

    state: TxnState
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    # The transaction protocol of the client's last request that changed the state (Kafka's
    # ClientTransactionVersion): 2 means EndTxn bumps the epoch, and retries are told apart by it.
    client_transaction_version: int = 0
    # Set by a V2 EndTxn that exhausted the epoch: the id the producer continues with (epoch 0)
    # once the markers, written with the last epoch of the old id, are done.
    next_producer_id: int = NO_PRODUCER_ID
    # Set when the coordinator bumps the epoch itself; kept in memory only, never persisted.
    fence_reason: str | None = None


class TxnChanges(TypedDict, total=False):  # what a transition changes of TxnTransition (its state aside)
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    next_producer_id: int
    fence_reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FenceInfo:
    """Why the coordinator itself bumped the epoch, so a fenced producer is told the real cause."""

    reason: str
    epoch: int


class _Current(Generic[T]):
    """One field of the current TxnTransition, read through the metadata: the state of an id is
    that one value, replaced whole by each transition, never copied field by field."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, md: TransactionMetadata, owner: type | None = None) -> T:
        return cast(T, getattr(md.current, self.name))

    def __set__(self, md: TransactionMetadata, value: T) -> None:
        # Only tests set a field directly; it still replaces the one value.
        changes: dict[str, Any] = {self.name: value}  # Any: the field is chosen by name, its type is T
        md.current = dataclasses.replace(md.current, **changes)


class TransactionMetadata:
    state: _Current[TxnState] = _Current()
    producer_id: _Current[int] = _Current()
    last_producer_id: _Current[int] = _Current()
    producer_epoch: _Current[int] = _Current()
    last_producer_epoch: _Current[int] = _Current()
    txn_timeout_ms: _Current[int] = _Current()
    topic_partitions: _Current[frozenset[TopicPartition]] = _Current()
    txn_start_timestamp: _Current[int] = _Current()
    txn_last_update_timestamp: _Current[int] = _Current()
    client_transaction_version: _Current[int] = _Current()
    next_producer_id: _Current[int] = _Current()

    def __init__(self, transactional_id: str, t: TxnTransition) -> None:
        self.transactional_id = transactional_id
        self.current = t
        # Set while a transition is being persisted; others then get CONCURRENT_TRANSACTIONS.
        self.pending_state: TxnState | None = None
        self.last_fence: FenceInfo | None = None

    @classmethod
    def new(
        cls, transactional_id: str, producer_id: int, txn_timeout_ms: int, now_ms: int
    ) -> TransactionMetadata:
        return cls(
            transactional_id,
            TxnTransition(
                state=TxnState.EMPTY,
                producer_id=producer_id,
                last_producer_id=NO_PRODUCER_ID,
                producer_epoch=NO_PRODUCER_EPOCH,
                last_producer_epoch=NO_PRODUCER_EPOCH,
                txn_timeout_ms=txn_timeout_ms,
                topic_partitions=frozenset(),
                txn_start_timestamp=-1,
                txn_last_update_timestamp=now_ms,
            ),
        )

    def snapshot(self) -> TxnTransition:
        return dataclasses.replace(self.current, fence_reason=None)

    def __repr__(self) -> str:
        return (
            f"TransactionMetadata({self.transactional_id!r}, {self.state.display_name}, "
            f"producer {self.producer_id} epoch {self.producer_epoch}, "
            f"{len(self.topic_partitions)} partitions)"
        )

    # -- applying --------------------------------------------------------------------------------

    def _transition(self, state: TxnState, **changes: Unpack[TxnChanges]) -> TxnTransition:
        check_transition(self.transactional_id, self.state, state)
        return dataclasses.replace(self.snapshot(), state=state, **changes)

    def mark_pending(self, t: TxnTransition) -> None:
        self.pending_state = t.state

    def cancel_pending(self) -> None:
        """The write failed: the state stays as it was."""
        self.pending_state = None

    def complete_transition(self, t: TxnTransition) -> None:
        """Apply a transition once it is persisted."""
        check_transition(self.transactional_id, self.state, t.state)
        self.load(t)
        if t.fence_reason is not None:
            self.last_fence = FenceInfo(reason=t.fence_reason, epoch=t.producer_epoch)

    def load(self, t: TxnTransition) -> None:
        """Adopt a persisted state as is (replaying __transaction_state, or after the write)."""
        self.current = t
        self.pending_state = None

    # -- errors that say the real cause ------------------------------------------------------------

    def _concurrent(self, what: str) -> KafkaError:
        state = self.pending_state or self.state
        return KafkaError(
            ErrorCode.concurrent_transactions,
            f"{what} for '{self.transactional_id}' must wait: its transaction is "
            f"{state.display_name} (markers still being written); retry shortly",
        )

    def _fenced(self, epoch: int) -> KafkaError:
        if self.last_fence is not None and epoch < self.last_fence.epoch:
            cause = self.last_fence.reason
        else:
            cause = f"a newer producer with transactional id '{self.transactional_id}' exists"
        return KafkaError(
            ErrorCode.producer_fenced,
            f"producer epoch {epoch} of '{self.transactional_id}' is fenced: {cause}; "
            f"producer epoch is now {self.producer_epoch}",
        )

    def _check_producer(self, producer_id: int, epoch: int) -> None:
        if producer_id != self.producer_id:
            raise KafkaError(
                ErrorCode.invalid_producer_id_mapping,
                f"producer id {producer_id} does not belong to transactional id "
                f"'{self.transactional_id}' (its producer id is {self.producer_id})",
            )
        if epoch != self.producer_epoch:
            raise self._fenced(epoch)

    # -- InitProducerId ----------------------------------------------------------------------------

    def prepare_init_producer_id(
        self,
        *,
        txn_timeout_ms: int,
        expected: ProducerIdAndEpoch | None,
        now_ms: int,
        new_producer_id: Callable[[], int],
        server_tv: int = 0,
    ) -> TxnTransition:
        """A transition to EMPTY with the epoch to answer with, or, when a transaction is ONGOING,
        a fencing PREPARE_ABORT: persist it, write ABORT markers, answer CONCURRENT_TRANSACTIONS."""
        if self.pending_state is not None:
            raise self._concurrent("InitProducerId")
        if expected is not None and not self._is_valid_producer_id(expected):
            raise KafkaError(
                ErrorCode.producer_fenced,
                f"InitProducerId for '{self.transactional_id}' names producer "
                f"{expected.producer_id} epoch {expected.epoch}, but the id now belongs to "
                f"producer {self.producer_id} epoch {self.producer_epoch}",
            )
        match self.state:
            case TxnState.PREPARE_COMMIT | TxnState.PREPARE_ABORT:
                raise self._concurrent("InitProducerId")
            case TxnState.EMPTY | TxnState.COMPLETE_COMMIT | TxnState.COMPLETE_ABORT:
                return self._prepare_new_epoch(txn_timeout_ms, expected, now_ms, new_producer_id)
            case TxnState.ONGOING:
                return self.prepare_epoch_fence_abort(
                    now_ms, "a newer producer called InitProducerId and its open transaction was "
                    "aborted by the broker", server_tv,
                )
        raise KafkaError(
            ErrorCode.unknown_server_error,
            f"transactional id '{self.transactional_id}' is {self.state.display_name}, "
            "which InitProducerId never expects",
        )

    def _is_valid_producer_id(self, expected: ProducerIdAndEpoch) -> bool:
        # KIP-360: a fresh id (no epoch yet) is safe to hand out; the current id has its epoch
        # checked below; the previous id with an exhausted epoch is a retry after a rotation.
        return (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or expected.producer_id == self.producer_id
            or (
                expected.producer_id == self.last_producer_id
                and is_epoch_exhausted(expected.epoch)
            )
        )

    def _prepare_new_epoch(
        self,
        txn_timeout_ms: int,
        expected: ProducerIdAndEpoch | None,
        now_ms: int,
        new_producer_id: Callable[[], int],
    ) -> TxnTransition:
        changes = TxnChanges(
            txn_timeout_ms=txn_timeout_ms,
            topic_partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now_ms,
        )
        if is_epoch_exhausted(self.producer_epoch) and (
            expected is None or expected.epoch == self.producer_epoch
        ):
            changes.update({
                "producer_id": new_producer_id(),
                "last_producer_id": self.producer_id,
                "producer_epoch": 0,
                "last_producer_epoch": self.producer_epoch if expected else NO_PRODUCER_EPOCH,
            })
        else:
            epoch, last_epoch = self._next_epochs(expected)
            changes.update({"producer_epoch": epoch, "last_producer_epoch": last_epoch})
        return self._transition(TxnState.EMPTY, **changes)

    def _next_epochs(self, expected: ProducerIdAndEpoch | None) -> tuple[int, int]:
        bumped = self.producer_epoch + 1
        if expected is None:
            return bumped, NO_PRODUCER_EPOCH
        if self.producer_epoch == NO_PRODUCER_EPOCH or expected.epoch == self.producer_epoch:
            return bumped, self.producer_epoch
        if expected.epoch == self.last_producer_epoch:
            # A retry of a bump whose answer was lost: hand out the same epoch again.
            return self.producer_epoch, self.last_producer_epoch
        raise self._fenced(expected.epoch)

    def prepare_epoch_fence_abort(self, now_ms: int, reason: str, server_tv: int = 0) -> TxnTransition:
        """Bump the epoch of an ONGOING transaction and abort it (Kafka's PrepareEpochFence, then
        PrepareAbort with the bumped epoch); the old epoch's producer is a zombie from now on.
        The abort does not bump again under transaction.version 2 (KAFKA-19367, in Kafka 4.4): the
        markers carry epoch + 1, and the producer's next InitProducerId gets epoch + 2. The
        transaction is marked V2 then, as Kafka's record of the abort says."""
        if self.state is not TxnState.ONGOING:
            raise KafkaError(
                ErrorCode.invalid_txn_state,
                f"cannot fence '{self.transactional_id}': it is {self.state.display_name}",
            )
        check_transition(self.transactional_id, self.state, TxnState.PREPARE_EPOCH_FENCE)
        check_transition(
            self.transactional_id, TxnState.PREPARE_EPOCH_FENCE, TxnState.PREPARE_ABORT
        )
        return dataclasses.replace(
            self.snapshot(),
            state=TxnState.PREPARE_ABORT,
            producer_epoch=min(self.producer_epoch + 1, MAX_EPOCH),
            last_producer_epoch=NO_PRODUCER_EPOCH,
            txn_last_update_timestamp=now_ms,
            client_transaction_version=server_tv if server_tv >= 2 else self.client_transaction_version,
            fence_reason=reason,
        )

    def prepare_timeout_abort(self, now_ms: int, server_tv: int = 0) -> TxnTransition:
        return self.prepare_epoch_fence_abort(
            now_ms,
            f"transaction of '{self.transactional_id}' timed out after {self.txn_timeout_ms} ms "
            "and was aborted by the broker",
            server_tv,
        )

    def is_timed_out(self, now_ms: int) -> bool:
        return (
            self.state is TxnState.ONGOING
            and self.pending_state is None
            and self.txn_start_timestamp + self.txn_timeout_ms < now_ms
        )

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------

    def prepare_add_partitions(
        self, *, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition],
        now_ms: int, client_tv: int = 0,
    ) -> TxnTransition | None:
        """The ONGOING transition, or None when every partition is already in the transaction.
        client_tv is 2 when a V2 request (Produce v12+, TxnOffsetCommit v5) adds them implicitly."""
        self._check_producer(producer_id, producer_epoch)
        if self.pending_state is not None or self.state.is_preparing:
            raise self._concurrent("AddPartitionsToTxn")
        added = frozenset(partitions)
        if self.state is TxnState.ONGOING and added <= self.topic_partitions:
            return None
        if self.state is TxnState.ONGOING:
            start = self.txn_start_timestamp
        else:
            start = now_ms
        return self._transition(
            TxnState.ONGOING,
            topic_partitions=self.topic_partitions | added,
            txn_start_timestamp=start,
            txn_last_update_timestamp=now_ms,
            client_transaction_version=client_tv,
        )

    # -- EndTxn ------------------------------------------------------------------------------------

    def prepare_end_txn(
        self, *, producer_id: int, producer_epoch: int, commit: bool, now_ms: int
    ) -> TxnTransition | None:
        """A V1 EndTxn: PREPARE_COMMIT / PREPARE_ABORT, or None for a retry of a completed one."""
        from .end_txn import decide_end_txn  # end_txn builds on this module

        return decide_end_txn(self, producer_id=producer_id, producer_epoch=producer_epoch,
                              commit=commit, tv2=False, now_ms=now_ms).transition

    def prepare_complete(self, now_ms: int) -> TxnTransition:
        """After every marker is written: COMPLETE_COMMIT / COMPLETE_ABORT with no partitions; a
        V2 transaction that exhausted the epoch moves to its next producer id at epoch 0 now."""
        target = TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        changes = TxnChanges(topic_partitions=frozenset(), txn_last_update_timestamp=now_ms)
        if self.next_producer_id != NO_PRODUCER_ID:
            changes.update({"producer_id": self.next_producer_id, "last_producer_id": self.producer_id,
                            "producer_epoch": 0, "next_producer_id": NO_PRODUCER_ID})
        return self._transition(target, **changes)

    # -- expiry ------------------------------------------------------------------------------------

    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        return (
            self.state.expiration_allowed
            and self.pending_state is None
            and self.txn_last_update_timestamp <= now_ms - expiration_ms
        )

    def prepare_dead(self) -> TxnTransition:
        return self._transition(TxnState.DEAD, topic_partitions=frozenset())
