"""The typed messages a partition log's owner task runs (storage/log_actor.py), one per operation.

A caller sends one with LogActor.ask and gets back the message's T; the actor runs them one at a
time, each class level handling its own in one match (_handle): the actor's own (appends, the
work around acknowledgements, close), what every sequenced log shares, then each backend's.
PostgreSQL's own are in storage/pg/log_messages.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from .api import ActiveProducer, AppendOrigin, FetchDataInfo, IsolationLevel, LogAppendInfo
from .cleaner.cleanable import CleaningPlan

if TYPE_CHECKING:
    from .cleaner.clean_pass import CleanResult
    from .log_config import LogConfig

__all__ = (
    "AFTER_ACKS", "BARRIER", "BEFORE_ACKS", "CLOSE", "ActiveProducers", "AfterAcks", "Append", "Barrier",
    "BeforeAcks", "Close", "DeleteRecordsBefore", "DirtyRatio", "EnforceRetention", "Flush", "LogMessage",
    "MaxTimestampOffset", "OffsetForTimestamp", "PlanCleaning", "Read", "SwapCleaned", "UpdateConfig",
)

T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True)
class LogMessage(Generic[T_co]):
    """Base of a partition log's messages; T_co is what the caller gets back."""


# -- the actor's own (storage/log_actor.py) ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Append(LogMessage[LogAppendInfo]):
    """Acknowledged with the group of appends it ran in, after that group's _before_acks."""

    records: bytes | memoryview
    origin: AppendOrigin


@dataclass(frozen=True, slots=True)
class BeforeAcks(LogMessage[None]):
    """The work an acknowledgement waits for (a due flush, a group commit)."""


@dataclass(frozen=True, slots=True)
class AfterAcks(LogMessage[None]):
    """The work that follows acknowledgements and none waits for (a periodic producer snapshot)."""


@dataclass(frozen=True, slots=True)
class Close(LogMessage[None]):
    """The last command: close the files or write a last snapshot; nothing runs after it."""


@dataclass(frozen=True, slots=True)
class Barrier(LogMessage[None]):
    """Answered once everything queued before it has run."""


# Field-less messages are values: one of each serves every caller (no allocation per append).
BEFORE_ACKS: LogMessage[None] = BeforeAcks()
AFTER_ACKS: LogMessage[None] = AfterAcks()
CLOSE: LogMessage[None] = Close()
BARRIER: LogMessage[None] = Barrier()


# -- every sequenced log's (storage/sequenced_log.py) and both backends' ------------------------------

@dataclass(frozen=True, slots=True)
class ActiveProducers(LogMessage[list[ActiveProducer]]):
    pass


@dataclass(frozen=True, slots=True)
class UpdateConfig(LogMessage[None]):
    """Adopt new topic configs between two commands, never in the middle of one."""

    config: LogConfig


@dataclass(frozen=True, slots=True)
class EnforceRetention(LogMessage[int]):
    """Delete what is past retention.ms / retention.bytes (local: the count of segments deleted;
    PostgreSQL: the new log start offset)."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class DeleteRecordsBefore(LogMessage[int]):
    """DeleteRecords: move the log start offset up to offset (-1: the high watermark); answers it."""

    offset: int


# -- the local log's (storage/partition_log.py) -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Read(LogMessage[FetchDataInfo]):
    """A read of a busy log (an idle one is read in the caller's task, without a message)."""

    fetch_offset: int
    max_bytes: int
    isolation: IsolationLevel
    min_one: bool


@dataclass(frozen=True, slots=True)
class OffsetForTimestamp(LogMessage[tuple[int, int] | None]):
    timestamp: int


@dataclass(frozen=True, slots=True)
class MaxTimestampOffset(LogMessage[tuple[int, int] | None]):
    pass


@dataclass(frozen=True, slots=True)
class Flush(LogMessage[None]):
    pass


@dataclass(frozen=True, slots=True)
class PlanCleaning(LogMessage[CleaningPlan | None]):
    now_ms: int
    map_capacity: int


@dataclass(frozen=True, slots=True)
class SwapCleaned(LogMessage[int]):
    """Take a cleaning pass's segments in, alone in the owner task (reads wait, never see a mix)."""

    result: CleanResult


@dataclass(frozen=True, slots=True)
class DirtyRatio(LogMessage[float]):
    """The share of the cleanable bytes that is dirty, now (after a pass, for its log line)."""
