"""What the backends whose brokers share one database answer alike (cluster mode's PostgreSQL,
broker/cluster/backend.py; a local set's cluster.db, broker/cluster/local_set.py): the stores
over the shared credentials, ACLs and broker configs, and leaving the cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from storage.api import AclStore, BrokerConfigStore, ScramCredentials
from storage.pg.security_store import SecurityTables, SharedAclStore, SharedScramCredentialStore

from ..backend import AclRecords
from .member import ClusterMember

__all__ = ("SharedStores",)

S = TypeVar("S", bound=SecurityTables)
B = TypeVar("B", bound=BrokerConfigStore)


class SharedStores(Generic[S, B]):
    """Part of a StorageBackend (broker/backend.py); each backend sets these in its __init__,
    typed as its own stores (which it also refreshes and polls its own way)."""

    security: S
    broker_configs: B
    member: ClusterMember

    def acl_store(self, reload: Callable[[AclRecords], None]) -> AclStore:
        security = self.security
        security.add_listener(lambda: reload(security.acl_records))  # changed through another broker
        return SharedAclStore(security)

    def scram_credentials(self) -> ScramCredentials:
        return SharedScramCredentialStore(self.security)

    def broker_config_store(self) -> BrokerConfigStore:
        return self.broker_configs

    async def leave(self) -> None:
        """Hand every partition over and end the lease (before the coordinators stop)."""
        await self.member.stop()
