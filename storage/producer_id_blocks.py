"""A single node's producer-id blocks (storage/api.py's ProducerIdBlockSource): the first id never
handed out, in <data dir>/producer_id_block, replaced atomically and fsynced before any id of a
new block is used. A crash after saving a block only skips its ids.

Kafka keeps its blocks in its metadata log; eosbroker's versions before this kept them as records
of their own in __transaction_state partition 0, which Kafka's tools cannot read. The
transaction coordinator still replays such records and raises the floor past them (honour)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Final

from protocol.errors import ErrorCode, KafkaError

from .fs import LOCAL_FS, FileSystem

__all__ = ("LocalProducerIdBlocks",)

FILE_NAME: Final = "producer_id_block"


class LocalProducerIdBlocks:
    def __init__(self, data_dir: Path, fs: FileSystem = LOCAL_FS) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._fs = fs
        self._next: int | None = None  # read at the first use

    def _read(self) -> int:
        if self._next is None:
            text = self._path.read_text().strip() if self._path.exists() else ""
            self._next = int(text or 0)
        return self._next

    async def honour(self, next_id: int) -> None:
        self._next = max(self._read(), next_id)

    async def allocate_producer_ids(self, count: int) -> int:
        if count < 1:
            raise ValueError(f"a producer-id block holds at least one id, not {count}")
        first = self._read()
        try:
            await asyncio.to_thread(self._fs.write_atomically, self._path, f"{first + count}\n".encode())
        except OSError as exc:
            raise KafkaError(ErrorCode.coordinator_not_available,
                             f"could not save the producer id block {first}-{first + count - 1} to "
                             f"{self._path}: {exc}") from exc
        self._next = first + count
        return first
