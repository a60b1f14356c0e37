"""Producer ids handed out from durably allocated blocks (Kafka's ProducerIdManager idea).

An id must never be handed out twice, also across restarts, or two producers would share
sequence state on every partition. The coordinator therefore persists each block before using
any id in it: next_block() proposes the block after the newest known one, the actor appends it to
__transaction_state (log.py's ProducerIdBlock record), then apply_block() makes it usable.
Replaying the log at start-up applies every block again; ids of a block that was only partly used
before a crash are skipped, never reused.
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
        self._latest: ProducerIdBlock | None = None  # newest block ever persisted
        self._current: ProducerIdBlock | None = None  # the block ids are taken from now
        self._next_id = 0

    def next_block(self) -> ProducerIdBlock:
        """The block to persist next: right after the newest one ever allocated."""
        first = 0 if self._latest is None else self._latest.last_producer_id + 1
        return ProducerIdBlock(first_producer_id=first, size=self.block_size)

    def apply_block(self, block: ProducerIdBlock) -> None:
        """A persisted block: while loading, the newest one replaces older ones."""
        if self._latest is not None and block.first_producer_id <= self._latest.last_producer_id:
            return
        self._latest = block
        self._current = block
        self._next_id = block.first_producer_id

    def finish_loading(self) -> None:
        """After replay: ids of the last block may have been given out before the restart."""
        self._current = None

    def try_generate(self) -> int | None:
        """The next free id, or None when a new block must be persisted first."""
        if self._current is None or self._next_id > self._current.last_producer_id:
            return None
        pid = self._next_id
        self._next_id += 1
        return pid

