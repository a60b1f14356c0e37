"""Producer ids handed out from durably allocated blocks (Kafka's ProducerIdManager idea).

An id must never be handed out twice, also across restarts, or two producers would share
sequence state on every partition. So ids come only from a block the ProducerIdBlockSource
(storage/api.py) has made durable: the state store asks it for one when the current block runs
out and hands it here with apply_block(). Ids of a block only partly used before a crash are
skipped, never reused: the source never gives a block out twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ("DEFAULT_BLOCK_SIZE", "ProducerIdBlock", "ProducerIdManager")

DEFAULT_BLOCK_SIZE: Final = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdBlock:
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1


class ProducerIdManager:
    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        self.block_size = block_size
        self._current: ProducerIdBlock | None = None  # the block ids are taken from now
        self._next_id = 0

    def apply_block(self, block: ProducerIdBlock) -> None:
        """A block the source made durable: ids come from it from now on."""
        self._current = block
        self._next_id = block.first_producer_id

    def try_generate(self) -> int | None:
        """The next free id, or None when a new block must be had first."""
        if self._current is None or self._next_id > self._current.last_producer_id:
            return None
        pid = self._next_id
        self._next_id += 1
        return pid
