"""The durable log start offset of one partition, moved by DeleteRecords.

Segments alone cannot say where a log starts once DeleteRecords has cut into a segment, so the
offset is kept in <partition dir>/log-start-offset-checkpoint, in the text format of Kafka's
offset checkpoint files (version line, entry count, "topic partition offset"). Kafka keeps one
such file per log dir and writes it every minute; here it sits beside the partition's segments,
so deleting the topic removes it, and it is written (fsync, rename) before DeleteRecords answers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

from .fs import LOCAL_FS, FileSystem

__all__ = ("CHECKPOINT_NAME", "read_log_start_offset", "write_log_start_offset")

log = logging.getLogger(__name__)
CHECKPOINT_NAME: Final = "log-start-offset-checkpoint"
_VERSION: Final = 0


def read_log_start_offset(directory: Path) -> int | None:
    """The checkpointed offset, or None when there is none (or it cannot be parsed)."""
    path = directory / CHECKPOINT_NAME
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    try:
        version, count, entries = int(lines[0]), int(lines[1]), lines[2:]
        if version != _VERSION or count != len(entries) or count != 1:
            raise ValueError(f"version {version}, {count} entries")
        return int(entries[0].rsplit(" ", 1)[1])
    except (ValueError, IndexError) as exc:
        log.warning("ignoring malformed %s: %s", path, exc)
        return None


def write_log_start_offset(
    directory: Path, topic: str, partition: int, offset: int, fs: FileSystem = LOCAL_FS
) -> None:
    """Replace the checkpoint durably (temp file, fsync, rename, directory fsync); a worker
    thread runs this, never the event loop."""
    fs.write_atomically(directory / CHECKPOINT_NAME, f"{_VERSION}\n1\n{topic} {partition} {offset}\n".encode())
