"""The small stores every process of a local set shares, in cluster.db (db.py), as cluster mode
keeps them in PostgreSQL (storage/pg/security_store.py, broker_config_store.py, feature_levels.py,
producer_ids.py): SCRAM credentials and ACLs, dynamic broker configs, the finalized feature levels
and the producer-id counter.

Credentials, ACLs and broker configs are read from memory; each change bumps a version row in its
own transaction, and every process re-reads the small tables when its poll of cluster.db finds the
row moved (the process that made the change at once), then tells its listeners.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..broker_config_store import BrokerConfigsInMemory
from ..feature_levels import StoredFeatureLevels
from ..shared_security import SECURITY_QUERIES, SecurityCache
from .db import Rereader, SharedDb, bump

__all__ = ("EmbeddedBrokerConfigStore", "EmbeddedFeatureLevels", "EmbeddedProducerIdBlocks", "EmbeddedSecurity")

Statement = tuple[str, tuple[object, ...]]
_SECURITY: Final = "security.version"
_BROKER_CONFIGS: Final = "broker_configs.version"
_PRODUCER_ID_NEXT: Final = "producer.id.next"


# Dynamic: the rows' column values, of whatever types the queries select.
async def _read_if_moved(db: SharedDb, key: str, known: str | None,
                         *queries: str) -> tuple[str | None, list[list[Any]]] | None:
    """The version row and the queries' rows in one snapshot, unless the version is `known`."""
    def work(c: sqlite3.Connection) -> tuple[str | None, list[list[Any]]] | None:
        row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        version = None if row is None else str(row[0])
        if version == known and known is not None:
            return None
        return version, [c.execute(q).fetchall() for q in queries]

    return await db.read(work)


class EmbeddedSecurity(SecurityCache):
    """What this process last read of the shared credentials and ACLs (storage/pg/security_store.py's
    SecurityTables: its SharedAclStore and SharedScramCredentialStore run on it)."""

    UPSERT_CREDENTIAL = "INSERT OR REPLACE INTO scram_credentials VALUES (?, ?, ?, ?, ?, ?)"
    DELETE_CREDENTIAL = "DELETE FROM scram_credentials WHERE username = ? AND mechanism = ?"
    INSERT_ACL = "INSERT OR IGNORE INTO acls (binding) VALUES (?)"
    DELETE_ACL = "DELETE FROM acls WHERE binding = ?"

    def __init__(self, db: SharedDb) -> None:
        super().__init__()
        self.db = db

    async def refresh(self) -> bool:
        found = await _read_if_moved(self.db, _SECURITY, self.version, *SECURITY_QUERIES)
        if found is None:
            return False
        self._adopt(found[0] or "0", *found[1])
        return True

    def watch(self) -> None:
        """Re-read when another process changed them (SharedDb.watch_forever)."""
        self.db.watch(_SECURITY, Rereader(self.refresh, "SCRAM credentials and ACLs"))

    async def write(self, statements: Iterable[Statement]) -> None:
        """The statements and the version bump in one transaction, then a re-read."""
        todo = list(statements)

        def work(c: sqlite3.Connection) -> None:
            for sql, args in todo:
                c.execute(sql, args)
            bump(c, _SECURITY)

        await self.db.run(work)
        await self.refresh()


class EmbeddedBrokerConfigStore(BrokerConfigsInMemory):
    """Dynamic broker configs by entity ("" for the default, else a node id), shared."""

    def __init__(self, db: SharedDb) -> None:
        super().__init__()
        self.db = db
        self.version: str | None = None

    async def refresh(self) -> bool:
        found = await _read_if_moved(self.db, _BROKER_CONFIGS, self.version,
                                     "SELECT entity, name, value FROM broker_configs")
        if found is None:
            return False
        entities: dict[str, dict[str, str]] = {}
        for entity, name, value in found[1][0]:
            entities.setdefault(entity, {})[name] = value
        self.version, self._entities = found[0] or "0", entities
        self._changed()
        return True

    def watch(self) -> None:
        self.db.watch(_BROKER_CONFIGS, Rereader(self.refresh, "the dynamic broker configs"))

    async def replace_many(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        def work(c: sqlite3.Connection) -> None:
            c.executemany("DELETE FROM broker_configs WHERE entity = ?", [(e,) for e in changes])
            c.executemany("INSERT INTO broker_configs (entity, name, value) VALUES (?, ?, ?)",
                          [(e, k, v) for e, configs in changes.items() for k, v in configs.items()])
            bump(c, _BROKER_CONFIGS)

        await self.db.run(work)
        await self.refresh()


class EmbeddedFeatureLevels:
    """The finalized feature levels; each row carries the epoch of the change that set it."""

    def __init__(self, db: SharedDb) -> None:
        self.db = db

    def seed(self, start_levels: Mapping[str, int]) -> StoredFeatureLevels:
        """Write the start levels where the set has none yet (the first process to start); the levels."""
        def work(c: sqlite3.Connection) -> StoredFeatureLevels:
            c.executemany("INSERT OR IGNORE INTO finalized_features VALUES (?, ?, 0)", sorted(start_levels.items()))
            return _stored(c)

        return self.db.run_now(work)

    async def load(self) -> StoredFeatureLevels:
        return await self.db.read(_stored)

    async def compare_and_set(self, name: str, level: int, expected: int) -> StoredFeatureLevels | None:
        """Set name's level if it is still expected (the write lock serialises the processes)."""
        def work(c: sqlite3.Connection) -> StoredFeatureLevels | None:
            changed = c.execute("UPDATE finalized_features SET level = ?, epoch = (SELECT max(epoch) + 1 FROM "
                                "finalized_features) WHERE name = ? AND level = ?", (level, name, expected)).rowcount
            return _stored(c) if changed == 1 else None

        return await self.db.run(work)


def _stored(c: sqlite3.Connection) -> StoredFeatureLevels:
    rows = c.execute("SELECT name, level, epoch FROM finalized_features").fetchall()
    return StoredFeatureLevels(epoch=max((int(epoch) for _, _, epoch in rows), default=0),
                               levels={str(name): int(level) for name, level, _ in rows})


class EmbeddedProducerIdBlocks:
    """storage/api.py's ProducerIdBlockSource: a counter row; the write lock serialises the
    processes and the commit makes a block durable before any id of it is used."""

    def __init__(self, db: SharedDb) -> None:
        self.db = db

    async def honour(self, next_id: int) -> None:
        def work(c: sqlite3.Connection) -> None:
            c.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                      "SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                      (_PRODUCER_ID_NEXT, str(next_id)))

        await self.db.run(work)

    async def allocate_producer_ids(self, count: int) -> int:
        if count < 1:
            raise ValueError(f"a producer-id block holds at least one id, not {count}")

        def work(c: sqlite3.Connection) -> int:
            c.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, '0')", (_PRODUCER_ID_NEXT,))
            row = c.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ? "
                            "RETURNING CAST(value AS INTEGER) - ?", (count, _PRODUCER_ID_NEXT, count)).fetchone()
            return int(row[0])

        return await self.db.run(work)
