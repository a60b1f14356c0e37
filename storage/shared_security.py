"""What a broker last read of the SCRAM credentials and ACLs its cluster shares, whichever database
keeps them (PostgreSQL: storage/pg/security_store.py; a local set's SQLite: storage/embedded/stores.py):
each reads its tables its own way and hands the rows here."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from .cluster_api import AclRecord
from .scram_credentials import ScramCredential

__all__ = ("CredentialRow", "SECURITY_QUERIES", "SecurityCache")

# (username, mechanism, salt, stored_key, server_key, iterations), as the tables keep them
CredentialRow = tuple[str, str, bytes, bytes, bytes, int]
# What a re-read selects, in the SQL both databases speak: the ACL rows, then the credential rows.
SECURITY_QUERIES: Final = ("SELECT binding FROM acls ORDER BY binding",
                           "SELECT username, mechanism, salt, stored_key, server_key, iterations "
                           "FROM scram_credentials ORDER BY username, mechanism")


class SecurityCache:
    """The shared credentials and ACLs as last read, and who to tell when a re-read changed them."""

    def __init__(self) -> None:
        self.version: str | None = None
        self.acl_records: list[AclRecord] = []
        self.credentials: dict[str, dict[str, ScramCredential]] = {}
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Called (on the event loop) after each re-read that found a change."""
        self._listeners.append(callback)

    def _adopt(self, version: str, acls: Iterable[Sequence[str]], credentials: Iterable[CredentialRow]) -> None:
        """Take the rows of SECURITY_QUERIES read at `version`, then tell the listeners."""
        self.version = version
        self.acl_records = [json.loads(binding) for (binding,) in acls]
        users: dict[str, dict[str, ScramCredential]] = {}
        for user, mechanism, salt, stored_key, server_key, iterations in credentials:
            users.setdefault(user, {})[mechanism] = ScramCredential(
                salt=bytes(salt), stored_key=bytes(stored_key), server_key=bytes(server_key), iterations=iterations)
        self.credentials = users
        for callback in self._listeners:
            callback()
