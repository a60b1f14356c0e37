"""The storage seam: what the broker and coordinators need from one partition's log, and (from
storage/cluster_api.py) who leads what and the stores a backend provides.

Producer-state, LSO and aborted-transaction logic is shared code (producer_state.py,
transaction_index.py) that every backend composes; a backend only stores and serves batches.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from pathlib import Path
from typing import Final, NamedTuple, NotRequired, Protocol, TypedDict, runtime_checkable

from protocol.errors import ErrorCode, KafkaError

# Who leads what and the shared stores (storage/cluster_api.py): callers import them from here.
from .cluster_api import (
    AclRecord,
    AclStore,
    BrokerConfigStore,
    BrokerEndpoint,
    ClusterSnapshot,
    ClusterView,
    LeadershipListener,
    PartitionLeader,
    PartitionLease,
    ProducerIdBlockSource,
    ScramCredentials,
    Unregistered,
)
from .feature_levels import StoredFeatureLevels

# Topic configs mean the same to every backend (Kafka's LogConfig): callers use them from here.
from .log_config import (
    KAFKA_TOPIC_DEFAULTS,
    TOPIC_CONFIG_DEFAULTS_FROM_BROKER,
    TOPIC_CONFIG_TYPES,
    incremental_alter,
    validate_topic_configs,
)
from .scram_credentials import ScramCredential, ScramCredentialStore

__all__ = (
    "CleanerStats",
    "PassStats",
    "AbortedTxn",
    "AclRecord",
    "AclStore",
    "ActiveProducer",
    "AppendOrigin",
    "BrokerConfigStore",
    "BrokerEndpoint",
    "ClusterSnapshot",
    "ClusterView",
    "Unregistered",
    "FetchDataInfo",
    "INTERNAL_TOPICS",
    "KAFKA_TOPIC_DEFAULTS",
    "IsolationLevel",
    "LeadershipListener",
    "TOPIC_CONFIG_DEFAULTS_FROM_BROKER",
    "TOPIC_CONFIG_TYPES",
    "LogAppendInfo",
    "LogSource",
    "OpenTransaction",
    "StoredFeatureLevels",
    "PartitionLeader",
    "PartitionLease",
    "PartitionLog",
    "ProducerIdBlockSource",
    "ScramCredential",
    "ScramCredentialStore",
    "ScramCredentials",
    "TopicMetadata",
    "TopicPartition",
    "incremental_alter",
    "validate_topic_configs",
    "validate_topic_name",
)

INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL: Final = re.compile(r"^[a-zA-Z0-9._-]+$")


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
    # The fetch offset lies on a segment before the one holding the end offset (the high watermark,
    # or the LSO for READ_COMMITTED): a read stops at a segment's end, so more is ready than was
    # read, and a long poll ends at once (Kafka's DelayedFetch, case F). Storage without segments
    # leaves it False.
    older_segment: bool = False

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.records)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveProducer:
    """One producer the log holds state for (DescribeProducers; Kafka's ProducerStateEntry)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction on this partition


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenTransaction:
    """A transaction open on one partition: what holds its last stable offset back (the oldest
    one does), for the LSO warning, metrics and operators."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    # Wall-clock ms when the broker appended its first batch; after a restart, that batch's own
    # timestamp (CreateTime: the producer's clock).
    start_timestamp: int
    last_timestamp: int


class TopicJson(TypedDict):
    """A topic as topics.json keeps it."""

    name: str
    topic_id: str
    partitions: int
    configs: NotRequired[dict[str, str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def to_json(self) -> TopicJson:
        return {"name": self.name, "topic_id": str(self.topic_id), "partitions": self.partitions,
                "configs": dict(self.configs)}

    @classmethod
    def from_json(cls, d: TopicJson) -> TopicMetadata:
        return cls(name=d["name"], topic_id=uuid.UUID(d["topic_id"]), partitions=d["partitions"],
                   configs=d.get("configs", {}))


class TopicIdCache:
    """topic_by_id without a walk over every topic per request (Produce v13 and Fetch v13+ name
    topics by id): where each id was found, checked against the topics at every lookup, so a
    topic deleted, recreated or grown is found afresh."""

    def __init__(self) -> None:
        self._found: dict[uuid.UUID, TopicMetadata] = {}

    def lookup(self, topics: Mapping[str, TopicMetadata], topic_id: uuid.UUID) -> TopicMetadata | None:
        meta = self._found.get(topic_id)
        if meta is not None and topics.get(meta.name) is meta:
            return meta
        self._found.pop(topic_id, None)
        meta = next((m for m in topics.values() if m.topic_id == topic_id), None)
        if meta is not None:
            self._found[topic_id] = meta
        return meta


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: non-empty, at most 249 chars, [a-zA-Z0-9._-], not . or .."""
    problem = None
    if not name:
        problem = "topic name is empty"
    elif name in {".", ".."}:
        problem = f"topic name cannot be {name!r}"
    elif len(name) > 249:
        problem = f"topic name is {len(name)} characters long; the maximum is 249"
    elif not _LEGAL.match(name):
        problem = f"topic name {name!r} contains characters other than ASCII alphanumerics, '.', '_' and '-'"
    if problem:
        raise KafkaError(ErrorCode.invalid_topic_exception, problem)


@runtime_checkable
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

    async def append(self, records: bytes | memoryview,
                     origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo: ...

    def submit(self, records: bytes | memoryview,
               origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo | asyncio.Future[LogAppendInfo]:
        """append in two steps: sequenced now, in call order (KafkaError if refused before that),
        and answered once durable: at once, or by the future (a pipelined Produce waits for it)."""
        ...

    async def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        *,
        min_one: bool = True,
    ) -> FetchDataInfo:
        """Whole batches from the one holding fetch_offset, within max_bytes; with min_one the
        first batch whatever its size (KIP-74: Kafka's minOneMessage, on for the first partition
        of a fetch with data), without it nothing when that batch does not fit."""
        ...

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch at or after timestamp, None past the end."""
        ...

    async def offset_for_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        ...

    async def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset to offset (-1: the high watermark)."""
        ...

    @property
    def size_bytes(self) -> int: ...

    async def active_producers(self) -> list[ActiveProducer]: ...

    def has_open_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """Whether the producer has a transaction open on this partition, under producer_epoch if
        given (KIP-890 verification: read on the event loop just before the append is queued)."""
        ...

    def open_transactions(self) -> list[OpenTransaction]:
        """The transactions open on this partition, oldest first (read on the event loop)."""
        ...

    def add_waiter(self, waiter: asyncio.Future[None]) -> None:
        """Set waiter's result on the next change of the high watermark or LSO (Fetch max_wait)."""
        ...

    def remove_waiter(self, waiter: asyncio.Future[None]) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class LogSource(Protocol):
    """Every partition log of the broker and the topics they belong to (the local LogManager;
    the next backends too). Handlers and coordinators reach logs only through this."""

    @property
    def data_dir(self) -> Path: ...

    @property
    def topics(self) -> Mapping[str, TopicMetadata]: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None: ...

    async def lookup_topic(self, name: str) -> TopicMetadata | None:
        """The topic, also if another broker created it since this one last looked (cluster mode:
        asked of the database; local mode: the same as topics.get)."""
        ...

    def topic_defaults(self) -> dict[str, str]:
        """The value of every topic config where the topic sets none."""
        ...

    def get_log(self, tp: TopicPartition) -> PartitionLog:
        """The partition's log; UNKNOWN_TOPIC_OR_PARTITION if it has none."""
        ...

    def find_log(self, tp: TopicPartition) -> PartitionLog | None: ...

    def open_transactions(self) -> Mapping[TopicPartition, list[OpenTransaction]]:
        """Every partition with an open transaction and those transactions, oldest first; cheap
        with many partitions (a partition without one costs one check)."""
        ...

    async def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                           validate_only: bool = False, *, replication_factor: int = 1) -> TopicMetadata:
        """replication_factor: how many brokers list it as replicas (cluster mode; 1 locally)."""
        ...

    async def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None: ...

    async def alter_configs(self, name: str, configs: Mapping[str, str],
                            validate_only: bool = False) -> None:
        """Replace the topic's own configs; each log adopts them inside its own task."""
        ...

    async def delete_topic(self, name: str) -> None: ...

    async def set_log_defaults(self, log_defaults: Mapping[str, object]) -> None:
        """New broker-level defaults of topic configs (dynamic broker configs): every log of a
        topic without its own value adopts them inside its own task."""
        ...

    async def enforce_retention(self) -> None:
        """Delete what retention.ms / retention.bytes let go, in the logs this broker leads."""
        ...


# What the log cleaner (storage/cleaner/log_cleaner.py, every backend's) reports to broker/metrics.
@dataclass(frozen=True, slots=True, kw_only=True)
class PassStats:
    partition: str
    bytes_read: int
    bytes_written: int
    dirty_ratio_before: float
    dirty_ratio_after: float
    seconds: float
    throttled_s: float = 0.0  # slept to stay under log.cleaner.io.max.bytes.per.second
    cpu_s: float = 0.0  # the worker's CPU time for the pass


@dataclass(slots=True)
class CleanerStats:
    """Totals since start, for broker/metrics."""

    passes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    seconds: float = 0.0
    failures: int = 0
    last: PassStats | None = None
    by_partition: dict[str, PassStats] = field(default_factory=dict)  # the last pass of each
