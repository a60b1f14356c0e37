"""The broker's shared services, handed to every handler through RequestContext."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from storage.api import BrokerEndpoint, ClusterView, LogSource, ProducerIdBlockSource, ScramCredentials

from .config import BrokerConfig
from .features import FinalizedFeatures

if TYPE_CHECKING:
    from coordinator.group.coordinator import GroupCoordinator
    from coordinator.share.coordinator import ShareCoordinator
    from coordinator.share.state_shards import ShareStateShards
    from coordinator.transaction.coordinator import TransactionCoordinator
    from storage.api import CleanerStats

    from .authorizer.standard import StandardAuthorizer
    from .connection_limits import ConnectionLimits
    from .dynamic_config import DynamicBrokerConfig
    from .fetch_sessions import FetchSessionCache
    from .handler import Handler
    from .inter_broker import InterBrokerClient
    from .metrics.counters import BrokerMetrics
    from .quotas.manager import ClientQuotas
    from .security.inter_broker_auth import InterBrokerSecurity

__all__ = ("BrokerState", "endpoint_of")


def endpoint_of(config: BrokerConfig) -> BrokerEndpoint:
    """The broker as Metadata advertises it (config changes once the listener is bound)."""
    host, port = config.advertised
    listeners = tuple((listener.name, *listener.advertised) for listener in config.client_listeners)
    return BrokerEndpoint(config.node_id, host, port, None, listeners)


@dataclass(slots=True, kw_only=True)
class BrokerState:
    config: BrokerConfig
    logs: LogSource
    handlers: Mapping[ApiKey, Handler]
    # From the data dir's meta.properties (storage/meta_properties.py), read at start-up.
    cluster_id: str = ""
    # The data dir's directory.id (DescribeQuorum's replica directory id); None: not known.
    directory_id: uuid.UUID | None = None
    # Where producer-id blocks come from: the data dir's file, or in cluster mode (docs/cluster.md)
    # the cluster-wide counter; server.py sets it.
    producer_id_blocks: ProducerIdBlockSource | None = None
    # The feature levels in force (ApiVersions, UpdateFeatures); server.py loads the stored ones.
    features: FinalizedFeatures = field(default_factory=FinalizedFeatures)
    # Coordinators plug in here as they are built (group, transaction).
    group_coordinator: GroupCoordinator | None = None
    txn_coordinator: TransactionCoordinator | None = None
    share_coordinator: ShareCoordinator | None = None  # share groups (KIP-932): coordinator/share
    share_state_shards: ShareStateShards | None = None  # cluster mode's share coordinator (its shards)
    # The request path's counters while metrics.port is set; None keeps that path free of them.
    metrics: BrokerMetrics | None = None
    # Set when authorizer.class.name names one; None keeps every request path free of ACL checks.
    authorizer: StandardAuthorizer | None = None
    # SCRAM credentials (AlterUserScramCredentials, SASL/SCRAM), loaded from the data dir at start.
    scram_credentials: ScramCredentials | None = None
    # Dynamic broker configs (AlterConfigs on BROKER resources); server.py opens them at start.
    dynamic_config: DynamicBrokerConfig | None = None
    fetch_sessions: FetchSessionCache | None = None  # made at the first Fetch (broker/handlers/fetch.py)
    # Client quotas (AlterClientQuotas), kept in the dynamic config store; server.py opens them.
    quotas: ClientQuotas | None = None
    # max.connections, max.connections.per.ip, ...: counted at accept (broker/connection_limits.py).
    connection_limits: ConnectionLimits | None = None
    # Cluster mode: how to log in to the other brokers (server.py) and the client that reaches
    # them (broker/services.py inter_broker); None on a broker on its own.
    inter_broker_security: InterBrokerSecurity | None = None
    inter_broker: InterBrokerClient | None = None
    # Who sent WriteTxnMarkers, each (principal, listener) logged once (broker/handlers/write_txn_markers.py).
    marker_senders: set[tuple[str, str]] = field(default_factory=set)
    cleaner_stats: CleanerStats | None = None  # while the log cleaner runs, for broker/metrics
    # Who is alive and who leads what: the storage backend's view (broker/backend.py).
    cluster: ClusterView

    def endpoint(self) -> BrokerEndpoint:
        return endpoint_of(self.config)

    @property
    def node_id(self) -> int:
        return self.config.node_id
