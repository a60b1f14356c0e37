"""Cluster mode's storage and membership (docs/cluster.md): the connection pool, the schema's
migrations, the cluster id, PgLogSource (topics and the logs this broker leads), the ClusterMember
that moves leadership and the stores every broker shares. This module builds a storage backend
(broker/backend.py), so it may import storage/pg; everything else reaches it through storage/api.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from storage.api import BrokerEndpoint, ClusterView
from storage.cleaner.log_cleaner import CleanerConfig
from storage.meta_properties import random_uuid
from storage.object_store import ObjectStore, ObjectStoreError, ObjectStoreSettings, check_writable, open_object_store
from storage.pg.broker_config_store import PgBrokerConfigStore
from storage.pg.cluster_store import ClusterStore, ensure_cluster_id, ensure_record_storage
from storage.pg.feature_levels import PgFeatureLevelStore
from storage.pg.log_cleaner import PgLogCleaner
from storage.pg.log_source import PgLogSource
from storage.pg.object_archive import ArchiveSettings
from storage.pg.object_commit import FlushSettings
from storage.pg.pool import Pool, close_pool, create_pool, stop_tasks
from storage.pg.producer_ids import PgProducerIdBlocks
from storage.pg.schema import SchemaTooNewError, migrate
from storage.pg.security_store import PgSecurityMetadata

from ..config import BrokerConfig
from ..dynamic_config import log_defaults
from ..features import FinalizedFeatures
from ..startup import StartupError
from .member import ClusterMember
from .shared_stores import SharedStores

__all__ = ("ClusterBackend", "EXIT_DATABASE_UNREACHABLE")

log = logging.getLogger(__name__)
EXIT_DATABASE_UNREACHABLE: Final = 1
_CONNECT_TIMEOUT_S: Final = 15.0
# Shutdown, after the broker left the cluster: how long its polling tasks and the pool's connections
# are waited for before they are cut off (a database that answers needs milliseconds).
_TASKS_END_S: Final = 0.5
_POOL_CLOSE_S: Final = 2.0


class _OneLine(logging.Filter):
    """asyncpg's pool logs a traceback each time it fails to reconnect while the database is
    down; one line says the same, and an outage is not a bug."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {record.exc_info[1]!r}"
            record.args = None
            record.exc_info = None
        return True


logging.getLogger("asyncpg.pool").addFilter(_OneLine())


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class _Pool:
    """asyncpg's pool, connected by ClusterBackend.connect: the parts that use it are built with
    the broker, before it may reach the database (each call goes to the pool connect opened)."""

    def __init__(self) -> None:
        self.pool: Pool | None = None

    def __getattr__(self, name: str) -> Any:  # forwards to the pool: whatever its attribute is
        if self.pool is None:
            raise RuntimeError("the cluster database is not connected yet")
        return getattr(self.pool, name)


class ClusterBackend(SharedStores[PgSecurityMetadata, PgBrokerConfigStore]):
    """Cluster mode's StorageBackend (broker/backend.py): PostgreSQL rows shared by the brokers."""

    shared = True

    def __init__(self, config: BrokerConfig, endpoint: Callable[[], BrokerEndpoint]) -> None:
        self._temp_dir: Path | None = None
        if "log.dirs" not in config.static_keys:
            # Cluster mode keeps nothing that matters locally: without --data-dir, a private
            # temporary one (brokers on one machine must not share a data dir).
            self._temp_dir = Path(tempfile.mkdtemp(prefix=f"eosbroker-node{config.node_id}-"))
            config = dataclasses.replace(config, log_dirs=str(self._temp_dir))
        self.config = config
        self.pool = pool = _Pool()
        self._object_store, self._object_store_error = _open_object_store(config)
        self.logs = PgLogSource(pool, config.node_id, config.data_dir, log_defaults(config),
                                config.producer_id_expiration_ms, object_store=self._object_store,
                                flush=FlushSettings(config.cluster_object_flush_ms, config.cluster_object_flush_bytes),
                                orphan_grace_ms=config.cluster_object_orphan_grace_ms,
                                archive=ArchiveSettings(config.cluster_object_archive_bytes,
                                                        config.cluster_object_archive_min_runs,
                                                        config.cluster_object_archive_interval_ms))
        store = ClusterStore(pool, config.node_id, config.cluster_lease_ms, config.cluster_url or "")
        self.member = ClusterMember(store, endpoint, config.cluster_lease_ms, self.logs)
        self.logs.add_fenced_listener(self.member.lost)
        self.logs.committer.time_left = self.member.lease_left_s  # no write outlasts the lease
        self.logs.committer.lease_s = config.cluster_lease_ms / 1000
        self.view: ClusterView = self.member.view
        self.producer_id_blocks = PgProducerIdBlocks(pool)
        # InitProducerId and topic changes need no lease, but a broker cut off from the database
        # answers them within one rather than after the statement timeout.
        self.producer_id_blocks.bound_s = self.logs.change_bound_s = config.cluster_lease_ms / 1000
        self.feature_levels = PgFeatureLevelStore(pool)
        self.security = PgSecurityMetadata(pool)  # SCRAM credentials and ACLs, shared by every broker
        self.broker_configs = PgBrokerConfigStore(pool)  # dynamic broker configs, per broker and default
        # A change made through another broker is seen here within a tenth of a lease (1 s at most).
        self.security_poll_s = min(max(config.cluster_lease_ms / 10_000, 0.1), 1.0)
        self.cluster_id: str | None = None
        self._features: FinalizedFeatures | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self, config: BrokerConfig) -> None:
        """Check the object store (if one is set), connect, migrate, read the topics; StartupError
        (exit status 1) if the object store or the database cannot be reached."""
        self.config = config
        if config.cluster_object_store_url:
            await _check_object_store(config, self._object_store, self._object_store_error)
        url = config.cluster_url or ""
        self.pool.pool = await _connect(url, config.cluster_lease_ms / 1000)
        try:
            await self._read(config, url)
        except BaseException as exc:
            await self.pool.close()
            self.pool.pool = None
            if isinstance(exc, StartupError):
                raise
            if isinstance(exc, SchemaTooNewError):
                raise StartupError(str(exc)) from None
            if isinstance(exc, Exception):
                raise StartupError(f"cannot use the cluster database at {redacted(url)}: {_reason(exc)}",
                                   EXIT_DATABASE_UNREACHABLE) from None
            raise
        self._features = await _cluster_features(self.feature_levels, config)

    async def _read(self, config: BrokerConfig, url: str) -> None:
        async with self.pool.acquire() as conn:
            await migrate(conn)
        self.cluster_id = await ensure_cluster_id(self.pool, config.cluster_id or random_uuid())
        if config.cluster_id is not None and self.cluster_id != config.cluster_id:
            raise StartupError(f"cluster.id {config.cluster_id} does not match the cluster database's "
                               f"{self.cluster_id} ({redacted(url)})")
        mine = config.cluster_object_store_url or "rows"
        storage = await ensure_record_storage(self.pool, mine)
        if storage != mine:
            raise StartupError(f"the cluster database at {redacted(url)} keeps record data in {_storage(storage)}, "
                               f"this broker in {_storage(mine)}: give every broker the same "
                               "cluster.object.store.url")
        await self.logs.load()
        await self.security.refresh()
        await self.broker_configs.refresh()

    def load(self, config: BrokerConfig) -> None:
        return None  # connect read the topics; a partition's log loads when this broker takes it

    def features(self, config: BrokerConfig) -> FinalizedFeatures:
        assert self._features is not None, "connect reads the cluster's feature levels"
        return self._features

    def new_cleaner(self, config: CleanerConfig) -> PgLogCleaner:
        url = self.config.cluster_object_store_url
        objects = None if url is None else ObjectStoreSettings(url, self.config.cluster_object_store_endpoint,
                                                               self.config.cluster_object_store_region)
        # Each broker cleans what it leads.
        return PgLogCleaner(self.logs, self.config.cluster_url or "", config, objects=objects,
                            object_bytes=self.config.cluster_object_archive_bytes,
                            lease_s=self.config.cluster_lease_ms / 1000)

    async def join(self) -> None:
        """Start the logs' background work, register and take a first share of the partitions."""
        self.logs.start()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self.security.run(self.security_poll_s), name="security-poll"))
        self._tasks.append(loop.create_task(self.broker_configs.run(self.security_poll_s), name="broker-configs-poll"))
        await self.member.start()

    async def close(self) -> None:
        await stop_tasks(self._tasks, _TASKS_END_S)
        if self.pool.pool is not None:
            await self.logs.close()
            # A statement left running on a database that does not answer (within()), or cancelled
            # and waiting for its cancel request's answer, holds its connection until its statement
            # timeout: the pool waits a little (what a live database needs), then cuts them off.
            await close_pool(self.pool.pool, min(self.config.cluster_lease_ms / 1000, _POOL_CLOSE_S))
        self._remove_temp_dir()

    async def abandon(self) -> None:
        await self.close()

    def _remove_temp_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)


async def _cluster_features(store: PgFeatureLevelStore, config: BrokerConfig) -> FinalizedFeatures:
    """The cluster's finalized feature levels, shared by every broker (broker/features.py)."""
    start = {"transaction.version": config.transaction_version}
    try:  # the first broker seeds the cluster's levels from its start levels (Kafka's format step)
        stored = await store.seed(start)
    except Exception as exc:
        raise StartupError(f"cannot read the cluster's feature levels: {exc!r}") from None
    if stored.levels.get("transaction.version", start["transaction.version"]) != start["transaction.version"]:
        log.info("transaction.version is finalized at %d for the cluster, not the configured %d",
                 stored.levels["transaction.version"], start["transaction.version"])
    return FinalizedFeatures(start, shared=store, shared_levels=stored)


def _storage(where: str) -> str:
    return "its rows" if where == "rows" else where


def _open_object_store(config: BrokerConfig) -> tuple[ObjectStore | None, Exception | None]:
    """The store of cluster.object.store.url, or why it cannot be used (said by connect)."""
    if not config.cluster_object_store_url:
        return None, None
    try:
        return open_object_store(config.cluster_object_store_url, endpoint=config.cluster_object_store_endpoint,
                                 region=config.cluster_object_store_region), None
    except (ValueError, OSError) as exc:
        return None, exc


async def _check_object_store(config: BrokerConfig, store: ObjectStore | None, error: Exception | None) -> None:
    """The object store answers and takes this broker's writes, or the broker does not start."""
    url = config.cluster_object_store_url or ""
    try:
        if store is None:
            raise error or ValueError("not configured")
        async with asyncio.timeout(_CONNECT_TIMEOUT_S):
            await check_writable(store, config.node_id)
    except TimeoutError:
        raise StartupError(f"cannot reach the object store at {url}: no answer within {_CONNECT_TIMEOUT_S:.0f} s",
                           EXIT_DATABASE_UNREACHABLE) from None
    except ObjectStoreError as exc:
        raise StartupError(f"cannot use the object store at {url}: {exc.reason}", EXIT_DATABASE_UNREACHABLE) from None
    except (ValueError, OSError) as exc:
        raise StartupError(f"cannot use the object store at {url}: {_reason(exc)}",
                           EXIT_DATABASE_UNREACHABLE) from None


async def _connect(url: str, lease_s: float) -> Pool:
    try:
        async with asyncio.timeout(_CONNECT_TIMEOUT_S):
            # A connection the pool opens again later (after a database restart or a network
            # fault) is given up after a lease, not asyncpg's 60 s: by then this broker leads
            # nothing and its next heartbeat tries again.
            return await create_pool(url, connect_timeout=lease_s)
    except Exception as exc:
        raise StartupError(f"cannot reach the cluster database at {redacted(url)}: {_reason(exc)}",
                           EXIT_DATABASE_UNREACHABLE) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {_CONNECT_TIMEOUT_S:.0f} s"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
