"""The ACLs of the authorizer as one JSON file in the data dir, replaced atomically on each change
(write a temp file, fsync, rename, fsync the directory), so a crash leaves the old or the new set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from .cluster_api import AclRecord
from .fs import FileSystem

__all__ = ("AclFileStore", "ACLS_FILE")

ACLS_FILE: Final = "acls.json"
_VERSION: Final = 1


class AclFileStore:
    def __init__(self, data_dir: Path, fs: FileSystem | None = None) -> None:
        self.path = data_dir / ACLS_FILE
        self._fs = fs or FileSystem()

    def load(self) -> list[AclRecord]:
        """The stored records; none when the file does not exist yet. Raises ValueError when the
        file is not what save wrote (the broker refuses to start rather than drop ACLs)."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.path} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict) or doc.get("version") != _VERSION or not isinstance(doc.get("acls"), list):
            raise ValueError(f"{self.path} is not an ACL file of version {_VERSION}")
        acls: list[AclRecord] = doc["acls"]
        return acls

    async def update(self, records: list[AclRecord], added: list[AclRecord],
                     removed: list[AclRecord]) -> list[AclRecord] | None:
        """Store the whole new set (this broker is the only writer of its data dir)."""
        self.save(records)
        return None

    def save(self, records: list[AclRecord]) -> None:
        data = json.dumps({"version": _VERSION, "acls": records}, indent=1).encode()
        self._fs.write_atomically(self.path, data)
