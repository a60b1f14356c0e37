"""SCRAM credentials, durable in the data directory: `<log.dirs>/scram-credentials.json`, replaced
atomically (temp file, fsync, rename, fsync of the directory) on every change, readable by the
broker's user only (mode 0600). Kafka keeps the same fields in its metadata log
(UserScramCredentialRecord): per user and mechanism the salt, StoredKey, ServerKey and iteration
count, never a password; the broker derives the keys from the salted password a client sends in
AlterUserScramCredentials (RFC 5802).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypedDict

__all__ = ("CREDENTIALS_FILE", "ScramCredential", "ScramCredentialStore")

CREDENTIALS_FILE: Final = "scram-credentials.json"
_VERSION: Final = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class _StoredCredential(TypedDict):
    """A credential as the file keeps it (base64 bytes)."""

    salt: str
    stored_key: str
    server_key: str
    iterations: int


def _encode(c: ScramCredential) -> _StoredCredential:
    b64 = base64.b64encode
    return {"salt": b64(c.salt).decode(), "stored_key": b64(c.stored_key).decode(),
            "server_key": b64(c.server_key).decode(), "iterations": c.iterations}


def _decode(raw: _StoredCredential) -> ScramCredential:
    b64 = base64.b64decode
    return ScramCredential(salt=b64(raw["salt"]), stored_key=b64(raw["stored_key"]),
                           server_key=b64(raw["server_key"]), iterations=int(raw["iterations"]))


class ScramCredentialStore:
    """user -> mechanism name -> credential; changes are durable before they return."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / CREDENTIALS_FILE
        self._users: dict[str, dict[str, ScramCredential]] = {}

    def load(self) -> None:
        """Read the file (none yet: no credentials). A corrupt file is an error, never an empty store."""
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise OSError(f"cannot read SCRAM credentials {self.path}: {exc}") from None
        if raw.get("version") != _VERSION:
            raise OSError(f"{self.path}: unknown version {raw.get('version')!r}")
        self._users = {user: {mech: _decode(c) for mech, c in mechs.items()} for user, mechs in raw["users"].items()}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(mechs) for user, mechs in self._users.items()}

    async def alter(self, upsertions: Iterable[tuple[str, str, ScramCredential]],
                    deletions: Iterable[tuple[str, str]]) -> None:
        """Apply all of them in one durable write (all or nothing: memory changes only once the
        file is replaced). The write blocks the event loop briefly: changes are rare admin
        operations, and writing them in turn keeps two concurrent changes from losing either."""
        users = {user: dict(mechs) for user, mechs in self._users.items()}
        for user, mechanism in deletions:
            users.get(user, {}).pop(mechanism, None)
        for user, mechanism, credential in upsertions:
            users.setdefault(user, {})[mechanism] = credential
        users = {user: mechs for user, mechs in users.items() if mechs}
        self._write(users)
        self._users = users

    def _write(self, users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
        data = json.dumps({"version": _VERSION, "users": {
            user: {mech: _encode(c) for mech, c in mechs.items()} for user, mechs in users.items()}}, indent=1)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            try:
                view = memoryview(data.encode())
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
