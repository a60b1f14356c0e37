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


class _IndexFile:
    """What both indexes share (Kafka's AbstractIndex): entries of two increasing columns, kept in
    memory and appended to the file, the file first (a failed write leaves memory as it was)."""

    _entry: struct.Struct

    def __init__(self, path: Path, base_offset: int, fs: FileSystem = LOCAL_FS) -> None:
        self.path = path
        self.base_offset = base_offset
        self._keys: list[int] = []
        self._values: list[int] = []
        self._fs = fs
        self._fd = fs.open_append(path)

    def _read(self) -> list[tuple[int, int]] | None:
        """The file's entries as stored; None if its size is not a whole number of them."""
        data = self._fs.pread(self._fd, self._fs.size(self._fd), 0)
        return None if len(data) % self._entry.size else list(self._entry.iter_unpack(data))

    def __len__(self) -> int:
        return len(self._keys)

    def reset(self) -> None:
        self._keys.clear()
        self._values.clear()
        self._fs.truncate(self._fd, 0)

    def _append(self, key: int, value: int, stored: bytes) -> None:
        self._fs.write(self._fd, stored)
        self._keys.append(key)
        self._values.append(value)

    def truncate_to_entries(self, count: int) -> None:
        """Keep the first count entries, in the file and in memory (undoes a failed append)."""
        self._fs.truncate(self._fd, count * self._entry.size)
        del self._keys[count:], self._values[count:]

    def close(self) -> None:
        self._fs.close(self._fd)


class OffsetIndex(_IndexFile):
    """Maps offsets to file positions at or before them."""

    _entry = _OFFSET_ENTRY

    def load(self, log_size: int) -> bool:
        """Read entries from disk; False if the file is inconsistent (caller rebuilds)."""
        entries = self._read()
        if entries is None:
            return False
        last_off = last_pos = -1
        for rel, pos in entries:
            if rel <= last_off or pos <= last_pos or pos >= log_size:
                return False
            self._keys.append(self.base_offset + rel)
            self._values.append(pos)
            last_off, last_pos = rel, pos
        return True

    def append(self, offset: int, position: int) -> None:
        if self._keys and offset <= self._keys[-1]:
            return
        self._append(offset, position, _OFFSET_ENTRY.pack(offset - self.base_offset, position))

    def lookup(self, offset: int) -> int:
        """File position of the last indexed batch starting at or before offset (0 if none)."""
        i = bisect.bisect_right(self._keys, offset)
        return self._values[i - 1] if i else 0

    def truncate_to_position(self, position: int) -> None:
        self.truncate_to_entries(bisect.bisect_left(self._values, position))


class TimeIndex(_IndexFile):
    """Maps timestamps to the first offset whose batch may hold a timestamp at or above them."""

    _entry = _TIME_ENTRY

    def load(self) -> bool:
        entries = self._read()
        if entries is None:
            return False
        for ts, rel in entries:
            if self._keys and (ts <= self._keys[-1] or rel + self.base_offset <= self._values[-1]):
                return False
            self._keys.append(ts)
            self._values.append(self.base_offset + rel)
        return True

    @property
    def max_timestamp(self) -> int:
        return self._keys[-1] if self._keys else -1

    def maybe_append(self, max_timestamp: int, offset: int) -> None:
        if self._keys and max_timestamp <= self._keys[-1]:
            return
        if self._values and offset <= self._values[-1]:
            return
        self._append(max_timestamp, offset, _TIME_ENTRY.pack(max_timestamp, offset - self.base_offset))

    def lookup(self, timestamp: int) -> int:
        """An offset at or before the first batch whose max timestamp reaches timestamp."""
        i = bisect.bisect_left(self._keys, timestamp)
        return self._values[i - 1] if i else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        self.truncate_to_entries(bisect.bisect_left(self._values, offset))
