"""The backend of a local set (docs/processes.md): the N processes of one `--processes N` command
without cluster.url, sharing one data dir on this machine with no other service. Cluster mode's
machinery runs unchanged over an embedded database (storage/embedded): ClusterMember, LeaseView
and balance move leadership through SQLite leases in <data dir>/cluster.db; the coordinators
shard over the processes and markers go between them as between brokers (the inter-broker
client, `shared`). A partition's log is the single broker's LocalPartitionLog, opened by its
leader only under the partition's flock, so produce and fetch run exactly the local path.

Each process keeps its own node-<id> directory inside the shared one: its data-dir lock and
meta.properties (the cluster id, the set's, from cluster.db). Holding that lock proves that an
earlier incarnation of the node is dead (the kernel dropped its lock), so a restarted process
takes its lease and its partitions back at once instead of after cluster.lease.ms.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import Callable

from storage.api import BrokerEndpoint, ClusterView
from storage.cleaner.log_cleaner import CleanerConfig, LogCleaner
from storage.embedded.db import SharedDb
from storage.embedded.lease_store import EmbeddedLeaseStore
from storage.embedded.log_source import EmbeddedLogSource
from storage.embedded.stores import (
    EmbeddedBrokerConfigStore,
    EmbeddedFeatureLevels,
    EmbeddedProducerIdBlocks,
    EmbeddedSecurity,
)
from storage.embedded.topic_store import EmbeddedTopicStore
from storage.meta_properties import random_uuid

from ..config import BrokerConfig
from ..dynamic_config import log_defaults
from ..features import FinalizedFeatures
from ..startup import StartupError
from .member import ClusterMember
from .shared_stores import SharedStores

__all__ = ("LocalSetBackend",)

log = logging.getLogger(__name__)


class LocalSetBackend(SharedStores[EmbeddedSecurity, EmbeddedBrokerConfigStore]):
    shared = True

    def __init__(self, config: BrokerConfig, endpoint: Callable[[], BrokerEndpoint]) -> None:
        shared_dir = config.data_dir
        self.config = config = dataclasses.replace(config, log_dirs=str(shared_dir / f"node-{config.node_id}"))
        self.db = db = SharedDb(shared_dir)
        self.logs = EmbeddedLogSource(EmbeddedTopicStore(db), shared_dir, log_defaults(config),
                                      config.producer_id_expiration_ms)
        self.member = ClusterMember(EmbeddedLeaseStore(db, config.node_id, config.cluster_lease_ms, own_node=True),
                                    endpoint, config.cluster_lease_ms, self.logs)
        self.logs.add_fenced_listener(self.member.lost)
        self.view: ClusterView = self.member.view
        self.producer_id_blocks = EmbeddedProducerIdBlocks(db)
        self.security = EmbeddedSecurity(db)
        self.broker_configs = EmbeddedBrokerConfigStore(db)
        self.feature_levels = EmbeddedFeatureLevels(db)
        self.cluster_id: str | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self, config: BrokerConfig) -> None:
        """Open cluster.db and read the set's cluster id (StartupError if it cannot be used)."""
        self.config = config
        if (self.db.path.parent / "topics.json").exists():
            raise StartupError(f"{self.db.path.parent} is a single broker's data dir (topics.json): a set of "
                               "processes cannot share it; start it without --processes")
        try:
            await asyncio.to_thread(self.db.open)
            self.cluster_id = self.db.run_now(lambda c: _cluster_id(c, config.cluster_id or random_uuid()))
        except (OSError, sqlite3.Error) as exc:
            raise StartupError(f"cannot use {self.db.path}: {exc}") from None
        if config.cluster_id is not None and self.cluster_id != config.cluster_id:
            raise StartupError(f"cluster.id {config.cluster_id} does not match the set's {self.cluster_id} "
                               f"({self.db.path})")
        try:  # before the authorizer and the dynamic configs are built from them
            await self.security.refresh()
            await self.broker_configs.refresh()
        except sqlite3.Error as exc:
            raise StartupError(f"cannot read {self.db.path}: {exc}") from None

    def load(self, config: BrokerConfig) -> None:
        """With this process's dir locked: read the topics and the small stores."""
        try:
            self.logs.load()
        except sqlite3.Error as exc:
            raise StartupError(f"cannot read {self.db.path}: {exc}") from None

    def features(self, config: BrokerConfig) -> FinalizedFeatures:
        start = {"transaction.version": config.transaction_version}
        try:
            stored = self.feature_levels.seed(start)
        except sqlite3.Error as exc:
            raise StartupError(f"cannot read the set's feature levels: {exc}") from None
        if stored.levels.get("transaction.version") != config.transaction_version:
            log.info("transaction.version is finalized at %d for the set, not the configured %d",
                     stored.levels["transaction.version"], config.transaction_version)
        return FinalizedFeatures(start, shared=self.feature_levels, shared_levels=stored)

    def new_cleaner(self, config: CleanerConfig) -> LogCleaner:
        return LogCleaner(self.logs, config)  # the logs this process leads

    async def join(self) -> None:
        """Start the polls, register and take a first share."""
        self.logs.start()
        self.security.watch()
        self.broker_configs.watch()
        self._tasks.append(asyncio.get_running_loop().create_task(self.db.watch_forever(), name="cluster-db-poll"))
        await self.member.start()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.logs.close()
        self.db.close()

    async def abandon(self) -> None:
        await self.close()


def _cluster_id(c: sqlite3.Connection, proposed: str) -> str:
    """The set's cluster id: the first process to start writes its own (or cluster.id)."""
    c.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('cluster.id', ?)", (proposed,))
    return str(c.execute("SELECT value FROM meta WHERE key = 'cluster.id'").fetchone()[0])
