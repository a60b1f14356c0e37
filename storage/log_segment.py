"""One segment of a partition log: the .log file of batches and its sparse indexes.

File names are the segment's base offset, zero-padded to 20 digits, as Kafka names them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from protocol.errors import KafkaError
from protocol.record_batch import HEADER_SIZE, RecordBatchHeader, iter_batches

from .fs import LOCAL_FS, FileSystem
from .offset_index import OffsetIndex, TimeIndex

__all__ = ("LogSegment", "BatchLocation", "SegmentMark", "segment_name")

log = logging.getLogger(__name__)
_SCAN_CHUNK: Final = 1 << 20


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class BatchLocation:
    position: int
    header: RecordBatchHeader


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentMark:
    """A segment's state before an append, to return to if any of its writes fails."""

    size: int
    next_offset: int
    max_timestamp: int
    bytes_since_index: int
    index_entries: int
    time_index_entries: int


class LogSegment:
    """Appends go to the end of the .log file; reads use pread so they never move a file offset."""

    def __init__(
        self, directory: Path, base_offset: int, index_interval_bytes: int, fs: FileSystem = LOCAL_FS
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_path = directory / segment_name(base_offset, ".log")
        self._fs = fs
        self._fd = fs.open_append(self.log_path)
        self.size = fs.size(self._fd)
        index_paths = [directory / segment_name(base_offset, s) for s in (".index", ".timeindex")]
        # As Kafka's LogLoader does, a missing index file means the segment must be rebuilt.
        self._index_missing = not all(p.exists() for p in index_paths)
        try:
            self.index = OffsetIndex(index_paths[0], base_offset, fs)
        except OSError:
            fs.close(self._fd)
            raise
        try:
            self.time_index = TimeIndex(index_paths[1], base_offset, fs)
        except OSError:
            self.index.close()
            fs.close(self._fd)
            raise
        self._interval = index_interval_bytes
        self._bytes_since_index = 0
        self.next_offset = base_offset  # one past the last offset written here
        self.max_timestamp = -1
        self.created_ms = int(os.stat(self.log_path).st_mtime * 1000)

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, index_interval_bytes: int, fs: FileSystem = LOCAL_FS
    ) -> LogSegment:
        """A new, empty segment (at a roll); if any of its files cannot be made, none is left."""
        try:
            return cls(directory, base_offset, index_interval_bytes, fs)
        except OSError:
            for suffix in (".log", ".index", ".timeindex"):
                fs.unlink(directory / segment_name(base_offset, suffix))
            raise

    # -- recovery ---------------------------------------------------------------------------

    def load(self, recover: bool) -> int:
        """Open an existing segment. With recover, scan every batch (CRC included), truncate a
        torn or corrupt tail and rebuild the indexes; returns the bytes truncated."""
        if not recover and not self._index_missing and self._indexes_load():
            try:
                self._load_tail_offsets()
                return 0
            except KafkaError as exc:
                # A segment believed sound is corrupt past its last index entry: recover it
                # (truncating at the corruption) rather than refuse to start.
                log.error("%s: corrupt batch after the last index entry (%s); recovering", self.log_path, exc)
        return self.recover()

    def _indexes_load(self) -> bool:
        if not (self.index.load(self.size) and self.time_index.load()):
            return False
        # The first batch of a segment is always indexed, so an empty index of a non-empty
        # log is a lost write: rebuild it rather than scan the whole segment on every lookup.
        return self.size == 0 or len(self.index) > 0

    def _load_tail_offsets(self) -> None:
        last = None
        for loc in self.iter_from(self.index.lookup(1 << 62)):
            last = loc.header
        if last is not None:
            self.next_offset = last.last_offset + 1
        self.max_timestamp = self.time_index.max_timestamp

    def recover(self) -> int:
        self.index.reset()
        self.time_index.reset()
        self._bytes_since_index = 0
        valid = 0
        try:
            for loc in self._scan(verify_crc=True):
                self._index_batch(loc.position, loc.header)
                valid = loc.position + loc.header.size
        except KafkaError as exc:
            log.warning("%s: corrupt batch at byte %d (%s); truncating", self.log_path, valid, exc)
        truncated = self.size - valid
        if truncated:
            log.warning("%s: truncated %d bytes of torn or corrupt tail", self.log_path, truncated)
            self._fs.truncate(self._fd, valid)
            self.size = valid
        return truncated

    def _scan(self, verify_crc: bool, start: int = 0) -> Iterator[BatchLocation]:
        pos = start
        while pos < self.size:
            chunk = self._fs.pread(self._fd, max(_SCAN_CHUNK, HEADER_SIZE), pos)
            consumed = 0
            try:
                for rel, header in iter_batches(chunk, verify_crc):
                    yield BatchLocation(pos + rel, header)
                    consumed = rel + header.size
            except KafkaError:
                if consumed == 0:  # a batch larger than the chunk (read it whole), or corruption
                    size = RecordBatchHeader.parse(chunk, 0).size if len(chunk) >= HEADER_SIZE else 0
                    # Bound the size by the file so a garbage length can neither be negative
                    # nor make us allocate gigabytes.
                    if not len(chunk) < size <= self.size - pos:
                        raise
                    whole = self._fs.pread(self._fd, size, pos)
                    for _, h in iter_batches(whole, verify_crc):
                        yield BatchLocation(pos, h)
                    consumed = size
            pos += consumed

    def _index_batch(self, position: int, header: RecordBatchHeader) -> None:
        if self._bytes_since_index >= self._interval or not position:
            self.index.append(header.base_offset, position)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.time_index.maybe_append(header.max_timestamp, header.base_offset)
        self.next_offset = header.last_offset + 1

    # -- append and read -----------------------------------------------------------------------

    def append(
        self,
        parts: Sequence[bytes | bytearray | memoryview],
        headers: Sequence[tuple[int, RecordBatchHeader]],
        size: int | None = None,
    ) -> None:
        """Write batches whose offsets are already assigned (parts are written with one writev,
        size bytes in all); headers are (position relative to the write, header). On OSError the
        caller undoes the partial append with rollback(mark())."""
        size = sum(len(p) for p in parts) if size is None else size
        position = self.size
        self._fs.writev(self._fd, parts, size)
        self.size += size
        for rel, header in headers:
            self._index_batch(position + rel, header)

    def mark(self) -> SegmentMark:
        return SegmentMark(
            size=self.size,
            next_offset=self.next_offset,
            max_timestamp=self.max_timestamp,
            bytes_since_index=self._bytes_since_index,
            index_entries=len(self.index),
            time_index_entries=len(self.time_index),
        )

    def rollback(self, mark: SegmentMark) -> None:
        """Return files and memory to mark: cut what a failed append wrote to .log and indexes."""
        self._fs.truncate(self._fd, mark.size)
        self.index.truncate_to_entries(mark.index_entries)
        self.time_index.truncate_to_entries(mark.time_index_entries)
        self.size = mark.size
        self.next_offset = mark.next_offset
        self.max_timestamp = mark.max_timestamp
        self._bytes_since_index = mark.bytes_since_index

    def iter_from(self, position: int) -> Iterator[BatchLocation]:
        """Batch headers from a position, without CRC checks (data was validated on append)."""
        return self._scan(verify_crc=False, start=position)

    def find(self, offset: int) -> BatchLocation | None:
        """The batch holding offset, or the first one after it."""
        for loc in self.iter_from(self.index.lookup(offset)):
            if loc.header.last_offset >= offset:
                return loc
        return None

    @property
    def index_interval_bytes(self) -> int:
        return self._interval

    def read_range(self, start: int, end: int) -> bytes:
        return self._fs.pread(self._fd, end - start, start)

    def flush(self) -> None:
        self._fs.fsync(self._fd)

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after offset (batches are kept or dropped whole)."""
        loc = self.find(offset)
        if loc is None:
            return
        cut = loc.position if loc.header.base_offset >= offset else loc.position + loc.header.size
        self._fs.truncate(self._fd, cut)
        self.size = cut
        self.index.truncate_to_position(cut)
        self.time_index.truncate_to_offset(offset)
        self.next_offset = min(self.next_offset, offset)

    def close(self) -> None:
        for close in (self.index.close, self.time_index.close):
            close()
        self._fs.close(self._fd)

    def delete(self) -> None:
        self.close()
        self.delete_files()

    def delete_files(self) -> None:
        """Remove this segment's files (after close); also how a failed roll is undone."""
        for path in (self.log_path, self.index.path, self.time_index.path):
            self._fs.unlink(path)
        for extra in (".txnindex", ".snapshot"):
            self._fs.unlink(self.directory / segment_name(self.base_offset, extra))
