"""Cluster mode's storage and membership, built at start-up (docs/cluster.md): the connection
pool, the schema's migrations, the cluster id, PgLogSource (topics and the logs this broker
leads) and the ClusterMember that moves leadership. Like broker/server.py, this module builds a
storage backend, so it may import storage/pg; everything else reaches it through storage/api.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from storage.api import BrokerEndpoint
from storage.meta_properties import random_uuid
from storage.pg.broker_config_store import PgBrokerConfigStore
from storage.pg.cluster_store import ClusterStore, ensure_cluster_id
from storage.pg.feature_levels import PgFeatureLevelStore
from storage.pg.log_source import PgLogSource
from storage.pg.pool import create_pool
from storage.pg.schema import SchemaTooNewError, migrate
from storage.pg.security_store import PgSecurityMetadata

from ..config import BrokerConfig
from ..startup import StartupError
from .member import ClusterMember

__all__ = ("ClusterBackend", "EXIT_DATABASE_UNREACHABLE")

log = logging.getLogger(__name__)
EXIT_DATABASE_UNREACHABLE: Final = 1
_CONNECT_TIMEOUT_S: Final = 15.0


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


@dataclass(slots=True, kw_only=True)
class ClusterBackend:
    pool: Any  # asyncpg.Pool
    logs: PgLogSource
    member: ClusterMember
    cluster_id: str
    feature_levels: PgFeatureLevelStore
    security: PgSecurityMetadata  # SCRAM credentials and ACLs, shared by every broker
    security_poll_s: float
    broker_configs: PgBrokerConfigStore  # dynamic broker configs, per broker and cluster default
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    async def open(cls, config: BrokerConfig, data_dir: Path, log_defaults: Mapping[str, object],
                   endpoint: Callable[[], BrokerEndpoint]) -> ClusterBackend:
        """Connect, migrate, read the topics; StartupError (exit status 1) if the database cannot
        be reached."""
        url = config.cluster_url or ""
        pool = await _connect(url)
        try:
            async with pool.acquire() as conn:
                await migrate(conn)
            cluster_id = await ensure_cluster_id(pool, config.cluster_id or random_uuid())
            if config.cluster_id is not None and cluster_id != config.cluster_id:
                raise StartupError(f"cluster.id {config.cluster_id} does not match the cluster database's "
                                   f"{cluster_id} ({redacted(url)})")
            logs = PgLogSource(pool, config.node_id, data_dir, log_defaults, config.producer_id_expiration_ms)
            await logs.load()
            security = PgSecurityMetadata(pool)
            await security.refresh()
            broker_configs = PgBrokerConfigStore(pool)
            await broker_configs.refresh()
        except BaseException as exc:
            await pool.close()
            if isinstance(exc, StartupError):
                raise
            if isinstance(exc, SchemaTooNewError):
                raise StartupError(str(exc)) from None
            if isinstance(exc, Exception):
                raise StartupError(f"cannot use the cluster database at {redacted(url)}: {_reason(exc)}",
                                   EXIT_DATABASE_UNREACHABLE) from None
            raise
        member = ClusterMember(ClusterStore(pool, config.node_id, config.cluster_lease_ms, url), endpoint,
                               config.cluster_lease_ms, logs)
        logs.add_fenced_listener(member.lost)
        # A change made through another broker is seen here within a tenth of a lease (1 s at most).
        poll_s = min(max(config.cluster_lease_ms / 10_000, 0.1), 1.0)
        return cls(pool=pool, logs=logs, member=member, cluster_id=cluster_id,
                   feature_levels=PgFeatureLevelStore(pool), security=security, security_poll_s=poll_s,
                   broker_configs=broker_configs)

    async def join(self) -> None:
        """Start the logs' background work, register and take a first share of the partitions."""
        self.logs.start()
        self._tasks.append(asyncio.get_running_loop().create_task(self.security.run(self.security_poll_s),
                                                                  name="security-poll"))
        self._tasks.append(asyncio.get_running_loop().create_task(self.broker_configs.run(self.security_poll_s),
                                                                  name="broker-configs-poll"))
        await self.member.start()

    async def leave(self) -> None:
        """Hand every partition over and end the lease (before the coordinators stop)."""
        await self.member.stop()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.logs.close()
        await self.pool.close()


async def _connect(url: str) -> Any:
    try:
        async with asyncio.timeout(_CONNECT_TIMEOUT_S):
            return await create_pool(url)
    except Exception as exc:
        raise StartupError(f"cannot reach the cluster database at {redacted(url)}: {_reason(exc)}",
                           EXIT_DATABASE_UNREACHABLE) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {_CONNECT_TIMEOUT_S:.0f} s"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
