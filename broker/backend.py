"""The one choice of storage backend, made at start-up from the config (docs/cluster.md).

A backend gives the broker its parts behind storage/api.py: the partition logs (LogSource), who
leads what (ClusterView), producer-id blocks, and the stores of ACLs, SCRAM credentials, dynamic
configs and feature levels. Local files (broker/local_backend.py), PostgreSQL rows shared by a
cluster (broker/cluster/backend.py), or local files shared by the processes of one set on this
machine (broker/cluster/local_set.py).
broker/server.py calls these in order and never asks which backend runs:

    connect -> (data dir locked) load -> join -> ... serving ... -> leave -> close

and abandon() instead of close() when start-up fails part way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

from storage.api import (
    AclRecord,
    AclStore,
    BrokerConfigStore,
    BrokerEndpoint,
    ClusterView,
    LogSource,
    ProducerIdBlockSource,
    ScramCredentials,
)
from storage.cleaner.log_cleaner import CleanerConfig, CleanerService  # both backends' cleaners

from .config import BrokerConfig
from .features import FinalizedFeatures
from .supervisor import LOCAL_SET_ENV

__all__ = ("AclRecords", "StorageBackend", "choose_backend")

AclRecords = list[AclRecord]  # ACL bindings as stored (storage/api.py AclStore)


class StorageBackend(Protocol):
    # The parts, read-only (an implementation may hold a narrower type):
    @property
    def config(self) -> BrokerConfig:
        """The config the broker runs with: the backend may give it a private data dir."""
        ...

    @property
    def logs(self) -> LogSource: ...

    @property
    def view(self) -> ClusterView: ...

    @property
    def producer_id_blocks(self) -> ProducerIdBlockSource: ...

    @property
    def shared(self) -> bool:
        """Other brokers use the same storage: the broker needs its inter-broker client."""
        ...

    @property
    def cluster_id(self) -> str | None:
        """The cluster id the storage holds (set by connect); None: the data dir's."""
        ...

    async def connect(self, config: BrokerConfig) -> None:
        """Reach the storage before the data dir is locked (config has the bound ports);
        StartupError if it cannot."""
        ...

    def load(self, config: BrokerConfig) -> None:
        """With the data dir locked: load the logs and stores (OSError, ValueError: unreadable)."""
        ...

    def features(self, config: BrokerConfig) -> FinalizedFeatures:
        """The finalized feature levels, from their store (StartupError if unreadable)."""
        ...

    def acl_store(self, reload: Callable[[AclRecords], None]) -> AclStore:
        """Where the authorizer keeps its ACLs; reload is called with them all when another
        broker changed them."""
        ...

    def scram_credentials(self) -> ScramCredentials: ...

    def broker_config_store(self) -> BrokerConfigStore: ...

    def new_cleaner(self, config: CleanerConfig) -> CleanerService:
        """The log cleaner of the logs this broker leads."""
        ...

    async def join(self) -> None:
        """Start the logs' background work and take this broker's share of the partitions."""
        ...

    async def leave(self) -> None:
        """Hand what this broker leads over (before the coordinators stop)."""
        ...

    async def close(self) -> None:
        """Flush and close the logs, disconnect (after the services stopped)."""
        ...

    async def abandon(self) -> None:
        """Start-up failed: release what connect and load took, without marking a clean stop."""
        ...


def choose_backend(config: BrokerConfig, endpoint: Callable[[], BrokerEndpoint]) -> StorageBackend:
    """The backend config asks for: cluster.url names a cluster database; else the data dir, shared
    with the other processes of a set when the supervisor started this one as one of them
    (broker/supervisor.py's LOCAL_SET_ENV), or this broker's alone."""
    if config.cluster_url:
        from .cluster.backend import ClusterBackend

        return ClusterBackend(config, endpoint)
    if os.environ.get(LOCAL_SET_ENV):
        from .cluster.local_set import LocalSetBackend

        return LocalSetBackend(config, endpoint)
    from .local_backend import LocalBackend

    return LocalBackend(config, endpoint)
