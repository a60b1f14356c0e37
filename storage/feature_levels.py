"""`<log.dirs>/finalized-features.properties`: the feature levels an operator changed at run time.

Kafka keeps each finalized level as a FeatureLevelRecord in its metadata log and uses that
record's offset as the finalized-features epoch; a single node has no metadata log, so the levels
and an epoch that only ever grows live in this small file instead, replaced atomically on every
change. No file means the data dir was never changed: the configured start levels apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from .fs import FileSystem

__all__ = ("FEATURE_LEVELS_FILE", "FileFeatureLevelStore", "StoredFeatureLevels")

FEATURE_LEVELS_FILE: Final = "finalized-features.properties"
_EPOCH_KEY: Final = "finalized.features.epoch"


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredFeatureLevels:
    epoch: int
    levels: Mapping[str, int] = field(default_factory=dict)


class FileFeatureLevelStore:
    def __init__(self, data_dir: Path, fs: FileSystem | None = None) -> None:
        self.path = data_dir / FEATURE_LEVELS_FILE
        self.fs = fs or FileSystem()

    def load(self) -> StoredFeatureLevels | None:
        """The stored levels, or None if the file does not exist; ValueError if it is unreadable."""
        if not self.path.exists():
            return None
        props: dict[str, int] = {}
        for number, line in enumerate(self.path.read_text().splitlines(), 1):
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            key, sep, value = line.partition("=")
            if not sep or not value.strip().lstrip("-").isdigit():
                raise ValueError(f"{self.path} line {number}: expected name=level, got {line!r}")
            props[key.strip()] = int(value)
        epoch = props.pop(_EPOCH_KEY, 0)
        return StoredFeatureLevels(epoch=epoch, levels=props)

    def save(self, stored: StoredFeatureLevels) -> None:
        lines = [f"{_EPOCH_KEY}={stored.epoch}"] + [f"{k}={v}" for k, v in sorted(stored.levels.items())]
        self.fs.write_atomically(self.path, ("\n".join(lines) + "\n").encode())
