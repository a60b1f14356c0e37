"""The storage seam: what the broker and coordinators need from one partition's log.

Producer-state, LSO and aborted-transaction logic is shared code (producer_state.py,
transaction_index.py) that every backend composes; a backend only stores and serves batches.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from protocol.errors import ErrorCode, KafkaError

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
    "AbortedTxn",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "topic_id": str(self.topic_id), "partitions": self.partitions,
                "configs": dict(self.configs)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TopicMetadata:
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


# -- the cluster (docs/cluster.md): who is alive and who leads what ------------------------------


class BrokerEndpoint(NamedTuple):
    node_id: int
    host: str  # the first listener's advertised address
    port: int
    rack: str | None = None
    # Every advertised listener as (name, host, port), as Kafka registers a broker's endpoints;
    # empty for a broker registered before the cluster kept them (then host/port is all there is).
    listeners: tuple[tuple[str, str, int], ...] = ()

    def on(self, listener_name: str) -> BrokerEndpoint | None:
        """This broker as reached over the named listener; None when it has no such listener
        (Kafka leaves such a broker out of a Metadata answer to that listener's clients)."""
        if not self.listeners:
            return self
        for name, host, port in self.listeners:
            if name == listener_name:
                return self._replace(host=host, port=port)
        return None


class PartitionLeader(NamedTuple):
    leader: int  # node id; -1 while no live broker leads the partition
    leader_epoch: int


class PartitionLease(NamedTuple):
    """A partition's leadership as the database holds it (cluster mode)."""

    tp: TopicPartition
    leader: int  # node id; -1 while none, or while its lease has lapsed
    leader_epoch: int
    replication_factor: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSnapshot:
    """The live brokers (by node id) and every partition's lease, read in one transaction."""

    brokers: list[BrokerEndpoint]
    partitions: list[PartitionLease]
    # Milliseconds until each live broker's lease runs out unless renewed (database clock).
    lease_left_ms: Mapping[int, int] = field(default_factory=dict)
    # Registered brokers whose lease has lapsed (by node id): DescribeCluster's fenced brokers.
    fenced: list[BrokerEndpoint] = field(default_factory=list)


@runtime_checkable
class LeadershipListener(Protocol):
    """Told when this broker starts or stops leading a partition (the coordinators listen for
    their internal topics' partitions: leading one is being that shard's coordinator, and the
    leader epoch is the coordinator epoch)."""

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None: ...

    async def on_resigned(self, tp: TopicPartition) -> None: ...


class Unregistered(Enum):
    """What UnregisterBroker found: the registration removed, or why not."""

    REMOVED = "removed"
    LIVE = "live"  # a running broker stays registered while it runs
    NOT_REGISTERED = "not registered"


@runtime_checkable
class ClusterView(Protocol):
    """The live brokers and each partition's leader, as this broker last saw them (cheap reads on
    the event loop). The local backend's view is one broker leading everything at epoch 0."""

    @property
    def node_id(self) -> int: ...

    @property
    def leads_everything(self) -> bool:
        """This broker leads every partition for good (a broker on its own): the coordinators
        load every shard before the broker listens, and every partition's log is local. False
        wherever leadership moves between brokers (they follow add_listener's elections)."""
        ...

    def live_brokers(self) -> list[BrokerEndpoint]: ...

    def fenced_brokers(self) -> list[BrokerEndpoint]:
        """Brokers registered in the cluster that are not live (Kafka's fenced brokers, KIP-1073):
        in cluster mode those whose lease lapsed, killed or shut down; none in local mode."""
        ...

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        """None for a partition the cluster does not have."""
        ...

    def replicas(self, tp: TopicPartition) -> list[int]:
        """The brokers that could lead the partition at once, leader first (with shared storage:
        the live brokers, up to the topic's replication factor); Metadata's replicas and ISR."""
        ...

    def partition_states(self, topic: str, partitions: int) -> list[tuple[PartitionLeader | None, list[int]]]:
        """leader() and replicas() of partitions 0..partitions-1 of topic, in one call: Metadata
        asks for every partition of a topic, and clients ask often."""
        ...

    def add_listener(self, listener: LeadershipListener) -> None:
        """Register for elections; partitions this broker already leads are announced at once."""
        ...

    async def await_leaders(self, partitions: Sequence[TopicPartition], timeout_s: float) -> bool:
        """Wait, up to timeout_s, until this view names a live leader for each partition (new
        ones: in cluster mode other brokers take their share); whether they all have one."""
        ...

    async def unregister(self, node_id: int) -> Unregistered:
        """Remove a fenced broker's registration (UnregisterBroker); a live one is kept."""
        ...


class AclStore(Protocol):
    """Where the authorizer keeps its ACLs: in the data dir (storage/acl_store.py), or in cluster
    mode shared by every broker (storage/pg/security_store.py). Records are plain JSON-able dicts."""

    def load(self) -> list[dict[str, Any]]: ...

    async def update(self, records: list[dict[str, Any]], added: list[dict[str, Any]],
                     removed: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Store a change durably: records is the whole new set as this broker sees it, added and
        removed what changed. A shared store returns every record it now holds (others' changes
        included); None: records is the stored set."""
        ...


class ScramCredentials(Protocol):
    """SCRAM credentials as the broker uses them: reads from memory, changes durable before they
    return (storage/scram_credentials.py in the data dir, storage/pg/security_store.py shared)."""

    def get(self, user: str, mechanism: str) -> ScramCredential | None: ...

    def users(self) -> dict[str, dict[str, ScramCredential]]: ...

    async def alter(self, upsertions: Iterable[tuple[str, str, ScramCredential]],
                    deletions: Iterable[tuple[str, str]]) -> None: ...


class BrokerConfigStore(Protocol):
    """Dynamic broker configs by entity ("" the cluster default, else a broker id): in the data
    dir (storage/broker_config_store.py) or shared by the cluster (storage/pg/broker_config_store.py).
    Reads from memory; replace is durable before it returns."""

    def configs(self, entity: str) -> Mapping[str, str]: ...

    def entities(self) -> list[str]:
        """The entities with dynamic configs (broker ids, "", group:<id>, quota:<entity>), sorted."""
        ...

    async def replace(self, entity: str, configs: Mapping[str, str]) -> None:
        """Make configs the entity's whole dynamic set (empty: none)."""
        ...

    async def replace_many(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        """replace for each entity of changes, durably at once."""
        ...

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Called after every change, whichever broker made it."""
        ...


@runtime_checkable
class ProducerIdBlockSource(Protocol):
    """Blocks of producer ids that no other broker of the cluster is given (Kafka's controller
    answers AllocateProducerIds so): a counter row in cluster mode (storage/pg/producer_ids.py),
    a file on a single node (storage/producer_id_blocks.py)."""

    async def allocate_producer_ids(self, count: int) -> int:
        """Durably take the next count ids; the first of them."""
        ...

    async def honour(self, next_id: int) -> None:
        """Ids below next_id may be in use (blocks an earlier version kept in the transaction
        log): no later block starts below it."""
        ...
