"""The storage seam: what the broker and coordinators need from one partition's log.

Producer-state, LSO and aborted-transaction logic is shared code (producer_state.py,
transaction_index.py) that every backend composes; a backend only stores and serves batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import NamedTuple, Protocol

__all__ = (
    "AbortedTxn",
    "AppendOrigin",
    "FetchDataInfo",
    "IsolationLevel",
    "LogAppendInfo",
    "PartitionLog",
    "TopicPartition",
)


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class IsolationLevel(IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class AppendOrigin(Enum):
    """Who writes: clients (validated), the coordinator (markers, internal topics), or recovery."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortedTxn:
    """One entry of a segment's .txnindex, as in Kafka's AbortedTxn."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LogAppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int = -1
    log_start_offset: int = 0
    duplicate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchDataInfo:
    """Whole stored batches starting at or before fetch_offset, plus the partition's offsets."""

    records: list[bytes | memoryview] = field(default_factory=list)
    high_watermark: int = 0
    last_stable_offset: int = 0
    log_start_offset: int = 0
    aborted_transactions: list[AbortedTxn] | None = None

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.records)


class PartitionLog(Protocol):
    """One partition's log, owned by one task; every method is safe to call from any task."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    async def append(self, records: bytes, origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo: ...

    async def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> FetchDataInfo: ...

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None: ...

    async def close(self) -> None: ...
