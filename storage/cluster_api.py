"""The storage seam's second half (re-exported by storage/api.py, which callers import): who is
alive and who leads what (the cluster view), and the stores of ACLs, SCRAM credentials, dynamic
broker configs and producer-id blocks each backend provides."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypedDict, runtime_checkable

from .scram_credentials import ScramCredential

if TYPE_CHECKING:
    from .api import TopicPartition

__all__ = (
    "AclRecord",
    "AclStore",
    "BrokerConfigStore",
    "BrokerEndpoint",
    "ClusterSnapshot",
    "ClusterView",
    "LeadershipListener",
    "PartitionLeader",
    "PartitionLease",
    "ProducerIdBlockSource",
    "ScramCredentials",
    "Unregistered",
)


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

    def electing(self, tp: TopicPartition) -> bool:
        """This broker holds tp's lease but is still opening its log: the other brokers already
        name it the leader, while its coordinators have not heard of the election yet."""
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


class AclRecord(TypedDict):
    """One ACL binding as stored (JSON): Kafka's enum names for the types, operation and permission."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


class AclStore(Protocol):
    """Where the authorizer keeps its ACLs: in the data dir (storage/acl_store.py), or in cluster
    mode shared by every broker (storage/pg/security_store.py)."""

    def load(self) -> list[AclRecord]: ...

    async def update(self, records: list[AclRecord], added: list[AclRecord],
                     removed: list[AclRecord]) -> list[AclRecord] | None:
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
