"""The aborted-transaction index: one .txnindex per segment, as Kafka's TransactionIndex.

Each entry is 34 bytes, big-endian: version i16 (0) | producer_id i64 | first_offset i64 |
last_offset i64 (the ABORT marker) | last_stable_offset i64 (the LSO right after the abort).
Entries are appended in marker order, so last_offset only grows within a partition.

Search (Kafka's collectAbortedTxns): an entry matters to a fetch of [fetch_offset, upper_bound) when
last_offset >= fetch_offset and first_offset < upper_bound. Once an entry's last_stable_offset is
>= upper_bound, no later entry can begin below upper_bound (a later abort either was open then, so
the LSO was at or below its first offset, or began after), so the search is complete.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from protocol.errors import CorruptRecordError

from .api import AbortedTxn
from .fs import LOCAL_FS, FileSystem

__all__ = (
    "ENTRY_SIZE",
    "TXN_INDEX_SUFFIX",
    "TransactionIndex",
    "TransactionIndexFile",
    "TxnIndexSearchResult",
    "collect_aborted",
    "decode_entries",
    "encode_entry",
)

TXN_INDEX_SUFFIX: Final = ".txnindex"
_ENTRY: Final = struct.Struct(">hqqqq")
ENTRY_SIZE: Final = _ENTRY.size  # 34
_VERSION: Final = 0


def encode_entry(txn: AbortedTxn) -> bytes:
    return _ENTRY.pack(
        _VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
    )


def decode_entries(data: bytes | memoryview) -> tuple[list[AbortedTxn], int]:
    """Whole entries in data, and the byte length they cover (a torn tail entry is left out)."""
    entries = []
    valid = len(data) - len(data) % ENTRY_SIZE
    for pos in range(0, valid, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != _VERSION:
            raise CorruptRecordError(
                f"transaction index entry at byte {pos} has version {version}"
            )
        entries.append(
            AbortedTxn(
                producer_id=pid, first_offset=first, last_offset=last, last_stable_offset=lso
            )
        )
    return entries, valid


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnIndexSearchResult:
    aborted: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """One segment's aborted transactions in memory, kept in last_offset order."""

    def __init__(self, base_offset: int, entries: Iterable[AbortedTxn] = ()) -> None:
        self.base_offset = base_offset
        self.entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []
        for entry in entries:
            self.append(entry)

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, txn: AbortedTxn) -> None:
        if self._last_offsets and txn.last_offset <= self._last_offsets[-1]:
            raise ValueError(
                f"aborted transaction of producer {txn.producer_id} ends at {txn.last_offset}, "
                f"not after the last indexed end {self._last_offsets[-1]}"
            )
        self.entries.append(txn)
        self._last_offsets.append(txn.last_offset)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> TxnIndexSearchResult:
        found = []
        start = bisect.bisect_left(self._last_offsets, fetch_offset)
        for txn in self.entries[start:]:
            if txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return TxnIndexSearchResult(aborted=found, is_complete=True)
        return TxnIndexSearchResult(aborted=found, is_complete=False)

    def truncate_to(self, offset: int) -> int:
        """Drop entries whose marker is at or after offset; return how many remain."""
        keep = bisect.bisect_left(self._last_offsets, offset)
        del self.entries[keep:]
        del self._last_offsets[keep:]
        return keep

    def keep_first(self, count: int) -> None:
        del self.entries[count:]
        del self._last_offsets[count:]

    def to_bytes(self) -> bytes:
        return b"".join(encode_entry(t) for t in self.entries)


def collect_aborted(
    indexes: Sequence[TransactionIndex], fetch_offset: int, upper_bound: int
) -> list[AbortedTxn]:
    """Aborted transactions overlapping [fetch_offset, upper_bound) across a partition's segments.

    indexes are in segment order. Segments that end before fetch_offset can still hold a relevant
    entry only through a marker after fetch_offset, which lives in a later segment, so scanning
    starts at the segment containing fetch_offset and stops at the first complete result (a
    transaction that began below upper_bound may be aborted in any later segment).
    """
    bases = [ix.base_offset for ix in indexes]
    start = max(bisect.bisect_right(bases, fetch_offset) - 1, 0)
    found: list[AbortedTxn] = []
    for index in indexes[start:]:
        result = index.collect_aborted(fetch_offset, upper_bound)
        found.extend(result.aborted)
        if result.is_complete:
            break
    return found


class TransactionIndexFile:
    """A segment's .txnindex on disk plus its in-memory index. The file is created by create()
    (at roll, off the event loop) or on the first append to a segment that has none."""

    def __init__(self, path: Path, base_offset: int, fs: FileSystem = LOCAL_FS) -> None:
        self.path = path
        self.index = TransactionIndex(base_offset)
        self._fs = fs
        self._fd: int | None = None

    @classmethod
    def open(cls, log_dir: Path, base_offset: int, fs: FileSystem = LOCAL_FS) -> TransactionIndexFile:
        """Load the segment's index; a torn trailing entry (crash mid-write) is cut off."""
        self = cls(log_dir / f"{base_offset:020d}{TXN_INDEX_SUFFIX}", base_offset, fs)
        if self.path.exists():
            data = self.path.read_bytes()
            entries, valid = decode_entries(data)
            for entry in entries:
                self.index.append(entry)
            if valid != len(data):
                os.truncate(self.path, valid)
        return self

    def create(self) -> None:
        if self._fd is None:
            self._fd = self._fs.open_append(self.path)

    def __len__(self) -> int:
        return len(self.index)

    def append(self, txn: AbortedTxn) -> None:
        """File first, then memory: a failed write leaves the index as it was (the caller cuts
        the file back with truncate_to_entries)."""
        self.create()
        assert self._fd is not None
        self._fs.write(self._fd, encode_entry(txn))
        self.index.append(txn)

    def flush(self) -> None:
        if self._fd is not None:
            self._fs.fsync(self._fd)

    def truncate_to(self, offset: int) -> None:
        self.truncate_to_entries(self.index.truncate_to(offset))

    def truncate_to_entries(self, count: int) -> None:
        if self._fd is not None:
            self._fs.truncate(self._fd, count * ENTRY_SIZE)
        elif self.path.exists():
            os.truncate(self.path, count * ENTRY_SIZE)
        self.index.keep_first(count)

    def reset(self) -> None:
        """Forget everything (recovery rebuilds the segment's entries from the log)."""
        self.close()
        self.index = TransactionIndex(self.index.base_offset)
        self._fs.unlink(self.path)

    def close(self) -> None:
        if self._fd is not None:
            self._fs.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self._fs.unlink(self.path)
