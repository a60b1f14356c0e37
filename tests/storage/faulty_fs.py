"""A FileSystem that injects faults at chosen steps, as kfake swaps its fs for a failing one.

A Fault names the operation ("write", "truncate", "fsync", "open") and the file (by the end of
its name, e.g. ".timeindex"). A failing write first stores `after` bytes (a disk that fills up
mid-write), then either raises (ENOSPC, EIO) or, with short=True, reports the short count the
way writev does when the disk fills. Faults fire `times` times (None: until cleared).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.fs import FileSystem


@dataclass(slots=True, kw_only=True)
class Fault:
    op: str = "write"
    suffix: str = ".log"
    after: int = 0
    short: bool = False
    errno: int = errno.ENOSPC
    times: int | None = 1
    fired: int = 0


class FaultyFileSystem(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.faults: list[Fault] = []

    def inject(self, **kw: object) -> Fault:
        fault = Fault(**kw)  # type: ignore[arg-type]
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        self.faults.clear()

    def _take(self, op: str, path: Path | None) -> Fault | None:
        for fault in self.faults:
            if fault.op == op and path is not None and path.name.endswith(fault.suffix):
                fault.fired += 1
                if fault.times is not None and fault.fired >= fault.times:
                    self.faults.remove(fault)
                return fault
        return None

    def _raise(self, fault: Fault, what: str, path: Path | None) -> None:
        raise OSError(fault.errno, f"injected {os.strerror(fault.errno)} on {what}", str(path))

    def raw_writev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview]) -> int:
        path = self.path_of(fd)
        fault = self._take("write", path)
        if fault is None:
            return super().raw_writev(fd, parts)
        head = b"".join(parts)[: fault.after]
        written = os.write(fd, head) if head else 0
        if not fault.short:
            self._raise(fault, "write", path)
        return written

    def truncate(self, fd: int, size: int) -> None:
        fault = self._take("truncate", self.path_of(fd))
        if fault is not None:
            self._raise(fault, "truncate", self.path_of(fd))
        super().truncate(fd, size)

    def fsync(self, fd: int) -> None:
        fault = self._take("fsync", self.path_of(fd))
        if fault is not None:
            self._raise(fault, "fsync", self.path_of(fd))
        super().fsync(fd)

    def open_append(self, path: Path) -> int:
        fault = self._take("open", path)
        if fault is not None:
            self._raise(fault, "open", path)
        return super().open_append(path)

    def open_new(self, path: Path) -> int:
        fault = self._take("open", path)
        if fault is not None:
            self._raise(fault, "open", path)
        return super().open_new(path)
