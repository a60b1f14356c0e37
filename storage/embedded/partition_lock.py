"""The fence for a partition's files when processes share one data dir.

A process writes a partition's segment files only while it holds an exclusive flock on
<data dir>/.partition-locks/<topic>-<partition>.lock, taken when it is elected (before the log
opens) and released after the log closed. The kernel drops the lock only when the holder's file is
closed -- on close, exit or SIGKILL, never while the holder is paused -- so a SIGSTOPped leader
keeps every other process out of its partitions until the supervisor kills it, and two writers of
one partition cannot happen. The lock files live beside the partition directories, never inside,
and are never deleted: a deleted topic's directory can be removed under its lock, and a topic
created again under the name takes the same lock. The descriptor is not inheritable (PEP 446) and
the cleaner's workers come from a forkserver, so no child of the broker holds it on after the
broker died.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Final

__all__ = ("LOCKS_DIR", "PartitionLock")

LOCKS_DIR: Final = ".partition-locks"


class PartitionLock:
    def __init__(self, data_dir: Path, partition: str) -> None:
        self.path = data_dir / LOCKS_DIR / f"{partition}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take it without waiting; False while another process holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the lock
