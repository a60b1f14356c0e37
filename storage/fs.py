"""The file-access seam of the local log: every write, truncate, fsync and rename of segments,
indexes, snapshots and checkpoints goes through a FileSystem, as kfake routes its files through
an `fs` it can swap for a fault-injecting one. Tests substitute a subclass that fails a write
after N bytes, raises ENOSPC or writes short at any step (tests/storage/faulty_fs.py).

Every write is checked for length: a short write is an OSError (ENOSPC), never a silent gap.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

__all__ = ("FileSystem", "IOV_MAX", "LOCAL_FS", "ShortWriteError")

_APPEND_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_APPEND
# The most buffers one writev(2) takes (1024 on Linux); more is EINVAL.
IOV_MAX: Final[int] = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024


class ShortWriteError(OSError):
    """A write that stored fewer bytes than asked: the disk filled up mid-write."""

    def __init__(self, path: object, written: int, size: int) -> None:
        super().__init__(errno.ENOSPC, f"short write to {path}: {written} of {size} bytes")


class FileSystem:
    """The local file system. Methods take and return raw fds so the hot path stays os.*."""

    def __init__(self) -> None:
        self._paths: dict[int, Path] = {}

    def open_append(self, path: Path) -> int:
        """Open (creating) a file whose writes always go to its end."""
        fd = os.open(path, _APPEND_FLAGS, 0o644)
        self._paths[fd] = path
        return fd

    def open_new(self, path: Path) -> int:
        """Create (or empty) a file for writing."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._paths[fd] = path
        return fd

    def path_of(self, fd: int) -> Path | None:
        return self._paths.get(fd)

    def writev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview], size: int) -> None:
        if len(parts) <= IOV_MAX:
            written = self.raw_writev(fd, parts)
        else:  # writev(2) refuses more than IOV_MAX buffers (EINVAL): write them IOV_MAX at a time
            written = 0
            for i in range(0, len(parts), IOV_MAX):
                chunk = parts[i : i + IOV_MAX]
                n = self.raw_writev(fd, chunk)
                written += n
                if n != sum(map(len, chunk)):
                    break
        if written != size:
            raise ShortWriteError(self._paths.get(fd), written, size)

    def raw_writev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview]) -> int:
        """One writev call; may store fewer bytes than given (a full disk)."""
        return os.writev(fd, parts)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> None:
        self.writev(fd, (data,), len(data))

    def pread(self, fd: int, size: int, position: int) -> bytes:
        return os.pread(fd, size, position)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        os.close(fd)

    # -- whole files -------------------------------------------------------------------------

    def write_atomically(self, path: Path, data: bytes, *, sync: bool = True) -> None:
        """Replace path with data durably: write a temp file, fsync, rename, fsync the directory.
        On failure the temp file is removed and path is untouched. sync=False skips both fsyncs,
        for a file that only saves work and whose loader rejects a torn one: a reader sees the
        old or the new content, but a power failure may leave the new one empty."""
        tmp = path.with_name(path.name + ".tmp")
        fd = self.open_new(tmp)
        try:
            try:
                self.write(fd, data)
                if sync:
                    self.fsync(fd)
            finally:
                self.close(fd)
            self.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        if sync:
            self.fsync_dir(path.parent)

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def fsync_dir(self, directory: Path) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def unlink(self, path: Path) -> None:
        path.unlink(missing_ok=True)


LOCAL_FS: Final = FileSystem()
