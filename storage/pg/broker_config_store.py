"""Dynamic broker configs of a cluster in PostgreSQL (table `broker_configs`, schema migration 6):
per broker (entity = its id) and cluster-wide (entity ""), as Kafka's ConfigRecords of BROKER
resources. Every broker reads its own entity and the default.

A change rewrites one entity's rows and bumps cluster_meta's `broker_configs.version` in one
transaction; every broker polls that row (as the ACLs and SCRAM credentials are polled,
storage/pg/security_store.py) and re-reads the small table when it moved, then tells its listeners.
The broker that made the change re-reads at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..broker_config_store import BrokerConfigsInMemory
from .polling import poll_forever, read_if_moved
from .pool import Pool

__all__ = ("PgBrokerConfigStore",)


_BUMP_VERSION: Final = """
    INSERT INTO cluster_meta (key, value) VALUES ('broker_configs.version', '1')
    ON CONFLICT (key) DO UPDATE SET value = (cluster_meta.value::bigint + 1)::text
"""


class PgBrokerConfigStore(BrokerConfigsInMemory):
    def __init__(self, pool: Pool) -> None:
        super().__init__()
        self.pool = pool
        self.version: str | None = None

    async def refresh(self) -> bool:
        """Re-read the table if the version moved; whether it had."""
        found = await read_if_moved(self.pool, "broker_configs.version", self.version,
                                    "SELECT entity, name, value FROM broker_configs")
        if found is None:
            return False
        version, (rows,) = found
        entities: dict[str, dict[str, str]] = {}
        for r in rows:
            entities.setdefault(r["entity"], {})[r["name"]] = r["value"]
        self.version, self._entities = version, entities
        self._changed()
        return True

    async def run(self, interval_s: float) -> None:
        """Poll until cancelled."""
        await poll_forever(self.refresh, interval_s, "the dynamic broker configs")

    async def replace_many(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        """replace for several entities in one transaction."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM broker_configs WHERE entity = ANY($1::text[])", list(changes))
            await conn.executemany("INSERT INTO broker_configs (entity, name, value) VALUES ($1, $2, $3)",
                                   [(e, k, v) for e, configs in changes.items() for k, v in configs.items()])
            await conn.execute(_BUMP_VERSION)
        await self.refresh()
