"""SCRAM credentials and ACLs of a cluster, in PostgreSQL (tables `scram_credentials` and `acls`,
schema migration 5), shared by every broker: a change made through one broker reaches the others
at their next poll.

Every change bumps the `security.version` row of cluster_meta in its own transaction; each broker
reads that one row every poll interval (cluster.lease.ms / 10, at most 1 s) and, when it moved,
re-reads both tables (small: users and ACLs, not data) in one snapshot, then tells its listeners
(the authorizer). Polling, not LISTEN/NOTIFY: it needs no dedicated connection and survives a
database restart with nothing to re-subscribe. The broker that made a change re-reads at once, so
its own next request sees it.

Reads (authentication, authorization) are from memory, never a query on a request's path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Final, Protocol

from ..cluster_api import AclRecord
from ..scram_credentials import ScramCredential
from ..shared_security import SECURITY_QUERIES, SecurityCache
from .polling import poll_forever, read_if_moved
from .pool import Pool

__all__ = ("PgSecurityMetadata", "SecurityTables", "SharedAclStore", "SharedScramCredentialStore")

log = logging.getLogger(__name__)

_VERSION_KEY: Final = "security.version"
_BUMP_VERSION: Final = """
    INSERT INTO cluster_meta (key, value) VALUES ('security.version', '1')
    ON CONFLICT (key) DO UPDATE SET value = (cluster_meta.value::bigint + 1)::text
"""


def _key(record: AclRecord) -> str:
    """An ACL's row key: its fields in one canonical order, so equal bindings are one row."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


class SecurityTables(Protocol):
    """The shared credentials and ACLs as last read, and how to change them (in PostgreSQL here,
    in a local set's SQLite in storage/embedded/stores.py): the same statements in each one's SQL."""

    acl_records: list[AclRecord]
    credentials: dict[str, dict[str, ScramCredential]]
    UPSERT_CREDENTIAL: str  # (username, mechanism, salt, stored_key, server_key, iterations)
    DELETE_CREDENTIAL: str  # (username, mechanism)
    INSERT_ACL: str  # (binding key,)
    DELETE_ACL: str  # (binding key,)

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call back after each re-read that found a change."""
        ...

    async def write(self, statements: Iterable[tuple[str, tuple[object, ...]]]) -> None:
        """Apply the statements in one transaction that also tells the others, then re-read."""
        ...


class PgSecurityMetadata(SecurityCache):
    """What this broker last read of the shared credentials and ACLs, kept fresh by run()."""

    UPSERT_CREDENTIAL = """
        INSERT INTO scram_credentials (username, mechanism, salt, stored_key, server_key, iterations)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (username, mechanism) DO UPDATE
            SET salt = excluded.salt, stored_key = excluded.stored_key, server_key = excluded.server_key,
                iterations = excluded.iterations
    """
    DELETE_CREDENTIAL = "DELETE FROM scram_credentials WHERE username = $1 AND mechanism = $2"
    INSERT_ACL = "INSERT INTO acls (binding) VALUES ($1) ON CONFLICT DO NOTHING"
    DELETE_ACL = "DELETE FROM acls WHERE binding = $1"

    def __init__(self, pool: Pool) -> None:
        super().__init__()
        self.pool = pool

    async def refresh(self) -> bool:
        """Re-read both tables if the version moved; whether it had."""
        found = await read_if_moved(self.pool, _VERSION_KEY, self.version, *SECURITY_QUERIES)
        if found is None:
            return False
        self._adopt(found[0], *found[1])
        return True

    async def run(self, interval_s: float) -> None:
        """Poll until cancelled."""
        await poll_forever(self.refresh, interval_s, "SCRAM credentials and ACLs")

    async def write(self, statements: Iterable[tuple[str, tuple[object, ...]]]) -> None:
        """Apply the statements and bump the version in one transaction, then re-read."""
        async with self.pool.acquire() as conn, conn.transaction():
            for sql, args in statements:
                await conn.execute(sql, *args)
            await conn.execute(_BUMP_VERSION)
        await self.refresh()


class SharedAclStore:
    """The authorizer's AclStore where brokers share the ACLs: only the change is written, so ACLs
    changed at the same time through other brokers are kept."""

    def __init__(self, metadata: SecurityTables) -> None:
        self.metadata = metadata

    def load(self) -> list[AclRecord]:
        return list(self.metadata.acl_records)

    async def update(self, records: list[AclRecord], added: list[AclRecord],
                     removed: list[AclRecord]) -> list[AclRecord] | None:
        await self.metadata.write([*((self.metadata.DELETE_ACL, (_key(r),)) for r in removed),
                                   *((self.metadata.INSERT_ACL, (_key(r),)) for r in added)])
        return self.load()


class SharedScramCredentialStore:
    """ScramCredentialStore's interface over the shared table."""

    def __init__(self, metadata: SecurityTables) -> None:
        self.metadata = metadata

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.metadata.credentials.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(mechs) for user, mechs in self.metadata.credentials.items()}

    async def alter(self, upsertions: Iterable[tuple[str, str, ScramCredential]],
                    deletions: Iterable[tuple[str, str]]) -> None:
        """All of them in one transaction: all or nothing."""
        await self.metadata.write([
            *((self.metadata.DELETE_CREDENTIAL, (user, mechanism)) for user, mechanism in deletions),
            *((self.metadata.UPSERT_CREDENTIAL, (user, mechanism, c.salt, c.stored_key, c.server_key, c.iterations))
              for user, mechanism, c in upsertions)])
