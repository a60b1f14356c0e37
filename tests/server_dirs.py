"""What the tests' real servers (tests/pg_server.py, tests/s3_server.py) share: free loopback ports,
the tail of a server's log, and finding the directories of servers whose test run died.

Each server keeps its files in a temporary directory holding owner.pid, the test process that
started it; a directory whose owner is gone (a killed pytest) is an orphan for the next run to
stop and remove.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ("free_ports", "log_tail", "orphaned_dirs")


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that were free a moment ago."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def log_tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def orphaned_dirs(prefix: str) -> Iterator[Path]:
    """The temporary directories named `prefix`* whose owning test process has died."""
    for owner in Path(tempfile.gettempdir()).glob(f"{prefix}*/owner.pid"):
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            continue
        if not _alive(pid):
            yield owner.parent
