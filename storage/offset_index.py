"""Sparse offset and time indexes of one segment (Kafka's .index and .timeindex).

Entries are appended to the file as they are made and kept in memory for bisection; an index is
a cache of the log, so recovery rebuilds it from the segment whenever it is missing or suspect.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path
from typing import Final

from .fs import LOCAL_FS, FileSystem

__all__ = ("OffsetIndex", "TimeIndex")

_OFFSET_ENTRY: Final = struct.Struct(">ii")  # relative offset, file position
_TIME_ENTRY: Final = struct.Struct(">qi")  # max timestamp so far, relative offset


class OffsetIndex:
    """Maps offsets to file positions at or before them."""

    def __init__(self, path: Path, base_offset: int, fs: FileSystem = LOCAL_FS) -> None:
        self.path = path
        self.base_offset = base_offset
        self._offsets: list[int] = []
        self._positions: list[int] = []
        self._fs = fs
        self._fd = fs.open_append(path)

    def load(self, log_size: int) -> bool:
        """Read entries from disk; False if the file is inconsistent (caller rebuilds)."""
        data = self._fs.pread(self._fd, self._fs.size(self._fd), 0)
        if len(data) % _OFFSET_ENTRY.size:
            return False
        last_off = last_pos = -1
        for rel, pos in _OFFSET_ENTRY.iter_unpack(data):
            if rel <= last_off or pos <= last_pos or pos >= log_size:
                return False
            self._offsets.append(self.base_offset + rel)
            self._positions.append(pos)
            last_off, last_pos = rel, pos
        return True

    def __len__(self) -> int:
        return len(self._offsets)

    def reset(self) -> None:
        self._offsets.clear()
        self._positions.clear()
        self._fs.truncate(self._fd, 0)

    def append(self, offset: int, position: int) -> None:
        if self._offsets and offset <= self._offsets[-1]:
            return
        # The file first: a failed write leaves memory as it was (the caller truncates the file).
        self._fs.write(self._fd, _OFFSET_ENTRY.pack(offset - self.base_offset, position))
        self._offsets.append(offset)
        self._positions.append(position)

    def lookup(self, offset: int) -> int:
        """File position of the last indexed batch starting at or before offset (0 if none)."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._positions[i - 1] if i else 0

    def truncate_to_position(self, position: int) -> None:
        self.truncate_to_entries(bisect.bisect_left(self._positions, position))

    def truncate_to_entries(self, count: int) -> None:
        """Keep the first count entries, in the file and in memory (undoes a failed append)."""
        self._fs.truncate(self._fd, count * _OFFSET_ENTRY.size)
        del self._offsets[count:], self._positions[count:]

    def close(self) -> None:
        self._fs.close(self._fd)


class TimeIndex:
    """Maps timestamps to the first offset whose batch may hold a timestamp at or above them."""

    def __init__(self, path: Path, base_offset: int, fs: FileSystem = LOCAL_FS) -> None:
        self.path = path
        self.base_offset = base_offset
        self._timestamps: list[int] = []
        self._offsets: list[int] = []
        self._fs = fs
        self._fd = fs.open_append(path)

    def load(self) -> bool:
        data = self._fs.pread(self._fd, self._fs.size(self._fd), 0)
        if len(data) % _TIME_ENTRY.size:
            return False
        for ts, rel in _TIME_ENTRY.iter_unpack(data):
            if self._timestamps and (ts <= self._timestamps[-1] or rel + self.base_offset <= self._offsets[-1]):
                return False
            self._timestamps.append(ts)
            self._offsets.append(self.base_offset + rel)
        return True

    def reset(self) -> None:
        self._timestamps.clear()
        self._offsets.clear()
        self._fs.truncate(self._fd, 0)

    @property
    def max_timestamp(self) -> int:
        return self._timestamps[-1] if self._timestamps else -1

    def maybe_append(self, max_timestamp: int, offset: int) -> None:
        if self._timestamps and max_timestamp <= self._timestamps[-1]:
            return
        if self._offsets and offset <= self._offsets[-1]:
            return
        self._fs.write(self._fd, _TIME_ENTRY.pack(max_timestamp, offset - self.base_offset))
        self._timestamps.append(max_timestamp)
        self._offsets.append(offset)

    def lookup(self, timestamp: int) -> int:
        """An offset at or before the first batch whose max timestamp reaches timestamp."""
        i = bisect.bisect_left(self._timestamps, timestamp)
        return self._offsets[i - 1] if i else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        self.truncate_to_entries(bisect.bisect_left(self._offsets, offset))

    def __len__(self) -> int:
        return len(self._offsets)

    def truncate_to_entries(self, count: int) -> None:
        self._fs.truncate(self._fd, count * _TIME_ENTRY.size)
        del self._timestamps[count:], self._offsets[count:]

    def close(self) -> None:
        self._fs.close(self._fd)
