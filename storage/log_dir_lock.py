"""One broker per log directory: `<log.dirs>/.lock`, held with flock(2) for the process lifetime, as
Kafka's LogManager locks each log dir. The kernel drops the lock when the process dies (kill -9
included), so a stale file never blocks the next start; the file itself is never deleted, which would
let a second process lock a new file while the first still holds the old one."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Final

__all__ = ("LOCK_FILE", "LogDirInUseError", "LogDirLock")

LOCK_FILE: Final = ".lock"


class LogDirInUseError(Exception):
    """Another process holds the log directory's lock."""


class LogDirLock:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd: int | None = None

    def acquire(self) -> None:
        """Create the directory if it is missing, then take its lock or raise LogDirInUseError."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            who = f" (pid {holder})" if holder else ""
            raise LogDirInUseError(f"data dir {self.directory} is in use by another broker{who}; "
                                   "each broker needs its own log.dirs") from None
        # The holder's pid, for the message a second broker prints; informational only.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode(errors="replace").strip()
    except OSError:
        return ""
