"""The newest committed batches of a partition, kept by its leader so that consumers reading at the
tail (the common case) are served from memory instead of a query each. Bounded in bytes; holds
exactly the rows stored in the database (the same bytes), added only after their commit."""

from __future__ import annotations

import bisect
from collections import deque
from typing import Final

from .group_commit import BatchRow

__all__ = ("DEFAULT_TAIL_CACHE_BYTES", "TailCache")

DEFAULT_TAIL_CACHE_BYTES: Final = 1 << 20


class TailCache:
    def __init__(self, max_bytes: int = DEFAULT_TAIL_CACHE_BYTES) -> None:
        self._max_bytes = max_bytes
        self._rows: deque[BatchRow] = deque()
        self._bytes = 0

    def clear(self) -> None:
        self._rows.clear()
        self._bytes = 0

    def drop_below(self, offset: int) -> None:
        """Forget the rows starting below offset (the cleaner rewrote that range): reads there go to
        the database, which holds the cleaned rows."""
        while self._rows and self._rows[0].base_offset < offset:
            self._bytes -= len(self._rows.popleft().data)

    def add(self, rows: list[BatchRow]) -> None:
        """Rows just committed, in offset order, right after those held."""
        for row in rows:
            self._rows.append(row)
            self._bytes += len(row.data)
        while self._rows and self._bytes > self._max_bytes:
            self._bytes -= len(self._rows.popleft().data)

    def read(self, fetch_offset: int, max_bytes: int, limit: int,
             min_one: bool = True) -> tuple[list[bytes], int] | None:
        """As PartitionStore.read, if the batch holding fetch_offset is held; else None."""
        rows = self._rows
        if not rows or fetch_offset < rows[0].base_offset:
            return None
        # deque indexing is O(n) in the middle; a read near the tail starts close to the end.
        i = bisect.bisect_right(_Bases(rows), fetch_offset) - 1
        out: list[bytes] = []
        size, next_offset = 0, fetch_offset
        for j in range(max(i, 0), len(rows)):
            row = rows[j]
            if row.last_offset < fetch_offset:
                continue
            if row.base_offset >= limit or ((out or not min_one) and size + len(row.data) > max_bytes):
                break
            out.append(row.data)
            size += len(row.data)
            next_offset = row.last_offset + 1
        return out, next_offset


class _Bases:
    """The rows' base offsets as a sequence for bisect, without copying them."""

    def __init__(self, rows: deque[BatchRow]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> int:
        return self._rows[i].base_offset
