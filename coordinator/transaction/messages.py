"""The transaction coordinator's typed messages (what its actor runs) and effects (what a shard
asks for once its records are durable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.api import TopicPartition

from ..runtime import Message
from .marker_writer import TxnMarker
from .metadata import ProducerIdAndEpoch
from .outcomes import AbortCause

if TYPE_CHECKING:
    from .shard import TxnShard

__all__ = (
    "AbortTimedOut", "AddPartitions", "Barrier", "Complete", "CountOutcome", "EndTxn", "ExpireIds",
    "InitProducerId", "InstallShard", "LogLine", "SendMarkers", "TxnEffect", "TxnMessage",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class InitProducerId(Message[ProducerIdAndEpoch]):
    transactional_id: str | None  # None: an idempotent producer, a fresh id every time
    txn_timeout_ms: int
    expected: ProducerIdAndEpoch | None  # KIP-360: the id and epoch the producer had


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPartitions(Message[None]):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]
    tv2: bool  # the implicit add of a V2 Produce / TxnOffsetCommit


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxn(Message[ProducerIdAndEpoch]):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    tv2: bool  # EndTxn v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteTxn(Message[None]):
    """Every marker of the transaction ended at producer_epoch is written: persist COMPLETE_*."""

    transactional_id: str
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class AbortTimedOut(Message[None]):
    """Abort every transaction open past its transaction.timeout.ms (a timer's message)."""


@dataclass(frozen=True, slots=True)
class ExpireIds(Message[None]):
    """Remove the ids idle past transactional.id.expiration.ms (a timer's message)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallShard(Message[None]):
    """A shard replayed in the background: serve it, if its election (epoch) is still current."""

    partition: int
    epoch: int
    shard: TxnShard


@dataclass(frozen=True, slots=True)
class Barrier(Message[None]):
    """Answered once everything queued before it has run."""


TxnMessage = (InitProducerId | AddPartitions | EndTxn | CompleteTxn | AbortTimedOut | ExpireIds
              | InstallShard | Barrier)


@dataclass(frozen=True, slots=True)
class SendMarkers:
    """Write the transaction's markers, then persist its COMPLETE_* (coordinator epoch unset)."""

    marker: TxnMarker


@dataclass(frozen=True, slots=True)
class Complete:
    """Persist COMPLETE_* at once: a V2 abort with nothing added has no marker to wait for."""

    transactional_id: str
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class CountOutcome:
    commit: bool
    cause: AbortCause = AbortCause.CLIENT


@dataclass(frozen=True, slots=True)
class LogLine:
    level: int
    message: str


TxnEffect = SendMarkers | Complete | CountOutcome | LogLine
