"""`<log.dirs>/dynamic-broker-configs.json`: the broker configs changed at run time on a single node.

Kafka keeps dynamic broker configs as ConfigRecords in its metadata log, per broker (the resource
named by the broker's id) and cluster-wide (the resource named ""); a single node has no metadata
log, so both live in this small file, replaced atomically on every change (a kill -9 leaves the old
or the new file, never half of one). No file: nothing was ever changed. Values are kept as given,
passwords too (Kafka encrypts those with password.encoder.secret, which eosbroker does not have):
the data dir must be as private as server.properties.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from .fs import FileSystem

__all__ = ("BROKER_CONFIGS_FILE", "BrokerConfigsInMemory", "FileBrokerConfigStore")

BROKER_CONFIGS_FILE: Final = "dynamic-broker-configs.json"


class BrokerConfigsInMemory:
    """What every BrokerConfigStore (storage/api.py) shares: the configs by entity as last
    stored, read from memory, and the listeners told of each change. A subclass stores them
    (replace_many) and sets _entities."""

    def __init__(self) -> None:
        self._entities: dict[str, dict[str, str]] = {}
        self._listeners: list[Callable[[], None]] = []

    def configs(self, entity: str) -> Mapping[str, str]:
        return dict(self._entities.get(entity, {}))

    def entities(self) -> list[str]:
        """The entities with dynamic configs, sorted."""
        return sorted(self._entities)

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Called (on the event loop) after each change, whichever broker made it."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for callback in self._listeners:
            callback()

    async def replace(self, entity: str, configs: Mapping[str, str]) -> None:
        """Make configs the entity's whole dynamic set, durably, then tell the listeners."""
        await self.replace_many({entity: configs})

    async def replace_many(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        raise NotImplementedError


class FileBrokerConfigStore(BrokerConfigsInMemory):
    """Dynamic broker configs by entity ("" for the cluster default, else a broker id)."""

    def __init__(self, data_dir: Path, fs: FileSystem | None = None) -> None:
        super().__init__()
        self.path = data_dir / BROKER_CONFIGS_FILE
        self.fs = fs or FileSystem()

    def load(self) -> None:
        """Read the file; ValueError if it is not what save wrote."""
        if not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text())
            entities = {str(e): {str(k): str(v) for k, v in c.items()} for e, c in data["entities"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{self.path} is unreadable ({exc!r}): restore it or remove it to drop the "
                             "dynamic broker configs") from None
        self._entities = entities

    async def replace_many(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        """replace for several entities in one write."""
        entities = {**self._entities, **{entity: dict(configs) for entity, configs in changes.items()}}
        for entity, configs in changes.items():
            if not configs:
                del entities[entity]
        data = json.dumps({"entities": entities}, sort_keys=True, indent=1).encode()
        await asyncio.to_thread(self.fs.write_atomically, self.path, data)
        self._entities = entities
        self._changed()
