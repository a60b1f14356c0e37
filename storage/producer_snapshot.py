"""Producer-state snapshots: <offset>.snapshot files written at segment roll (Kafka's idea).

A snapshot holds every ProducerStateEntry as of map_end_offset (the file's name), so recovery loads
the newest snapshot at or below the recovery point and replays only the batch headers after it.

Layout (big-endian; eosbroker's own, not Kafka's: it keeps all retained batches per producer so that
deduplication of retries still works after a restart):

    version i16 (1) | crc32c u32 over everything after it | entry_count i32
    entry: producer_id i64 | producer_epoch i16 | coordinator_epoch i32 | last_timestamp i64 |
           current_txn_first_offset i64 (-1 = none) | batch_count i8 |
           batch_count x (last_seq i32 | last_offset i64 | offset_delta i32 | timestamp i64)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from crc32c import crc32c

from protocol.errors import CorruptRecordError

from .fs import LOCAL_FS, FileSystem
from .producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
)

__all__ = (
    "SNAPSHOT_SUFFIX",
    "decode_snapshot",
    "delete_snapshots_after",
    "delete_snapshots_before",
    "delete_snapshots_between",
    "encode_snapshot",
    "list_snapshot_offsets",
    "load_latest_snapshot",
    "snapshot_path",
    "write_snapshot",
)

SNAPSHOT_SUFFIX: Final = ".snapshot"
SNAPSHOT_VERSION: Final = 1
_HEADER: Final = struct.Struct(">hIi")
_ENTRY: Final = struct.Struct(">qhiqqb")
_BATCH: Final = struct.Struct(">iqiq")
_CRC_FROM: Final = struct.calcsize(">hI")


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    body = bytearray()
    count = 0
    for e in entries:
        count += 1
        txn_first = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
        body += _ENTRY.pack(
            e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
            txn_first, len(e.batch_metadata),
        )
        for b in e.batch_metadata:
            body += _BATCH.pack(b.last_seq, b.last_offset, b.offset_delta, b.timestamp)
    out = bytearray(_HEADER.pack(SNAPSHOT_VERSION, 0, count)) + body
    struct.pack_into(">I", out, 2, crc32c(memoryview(out)[_CRC_FROM:]))
    return bytes(out)


def _decode_entry(data: bytes, pos: int) -> tuple[ProducerStateEntry, int]:
    pid, epoch, coord_epoch, last_ts, txn_first, n = _ENTRY.unpack_from(data, pos)
    pos += _ENTRY.size
    if not 0 <= n <= NUM_BATCHES_TO_RETAIN:
        raise CorruptRecordError(f"producer snapshot entry for {pid} claims {n} batches")
    entry = ProducerStateEntry(
        producer_id=pid,
        producer_epoch=epoch,
        coordinator_epoch=coord_epoch,
        last_timestamp=last_ts,
        current_txn_first_offset=None if txn_first < 0 else txn_first,
    )
    for _ in range(n):
        last_seq, last_offset, delta, ts = _BATCH.unpack_from(data, pos)
        pos += _BATCH.size
        entry.batch_metadata.append(
            BatchMetadata(
                last_seq=last_seq, last_offset=last_offset, offset_delta=delta, timestamp=ts
            )
        )
    return entry, pos


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Entries of a snapshot; CorruptRecordError for a bad version, CRC or length."""
    if len(data) < _HEADER.size:
        raise CorruptRecordError(f"producer snapshot of {len(data)} bytes is truncated")
    version, crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptRecordError(f"producer snapshot version {version} is not supported")
    actual = crc32c(memoryview(data)[_CRC_FROM:])
    if actual != crc:
        raise CorruptRecordError(
            f"producer snapshot fails its CRC32C check: stored {crc:#010x}, computed {actual:#010x}"
        )
    entries, pos = [], _HEADER.size
    try:
        for _ in range(count):
            entry, pos = _decode_entry(data, pos)
            entries.append(entry)
    except struct.error as exc:
        raise CorruptRecordError(f"producer snapshot is truncated: {exc}") from exc
    if pos != len(data):
        raise CorruptRecordError(f"producer snapshot has {len(data) - pos} trailing bytes")
    return entries


# -- files -------------------------------------------------------------------------------------


def snapshot_path(log_dir: Path, offset: int) -> Path:
    return log_dir / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshot_offsets(log_dir: Path) -> list[int]:
    offsets = []
    for p in log_dir.glob(f"*{SNAPSHOT_SUFFIX}"):
        stem = p.name[: -len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def write_snapshot(log_dir: Path, state: ProducerStateManager, fs: FileSystem = LOCAL_FS) -> Path:
    """Write state durably as <map_end_offset>.snapshot (temp file, fsync, rename)."""
    path = snapshot_path(log_dir, state.map_end_offset)
    fs.write_atomically(path, encode_snapshot(state.producers.values()))
    return path


def load_latest_snapshot(
    log_dir: Path, state: ProducerStateManager, upto_offset: int
) -> int | None:
    """Restore the newest readable snapshot at or below upto_offset; return its offset.

    Unreadable snapshots are deleted and the next older one is tried, as Kafka does. With none,
    state starts empty at offset 0 and the caller replays the whole log.
    """
    for offset in reversed(list_snapshot_offsets(log_dir)):
        if offset > upto_offset:
            continue
        path = snapshot_path(log_dir, offset)
        try:
            entries = decode_snapshot(path.read_bytes())
        except CorruptRecordError:
            path.unlink(missing_ok=True)
            continue
        state.restore(entries, offset)
        return offset
    state.truncate_fully_and_start_at(0)
    return None


def delete_snapshots_after(log_dir: Path, offset: int) -> None:
    """On truncation: snapshots beyond the new log end describe records that no longer exist."""
    for o in list_snapshot_offsets(log_dir):
        if o > offset:
            snapshot_path(log_dir, o).unlink(missing_ok=True)


def delete_snapshots_between(log_dir: Path, low: int, high: int, fs: FileSystem = LOCAL_FS) -> None:
    """Snapshots strictly between low and high: superseded by the one at high (periodic
    snapshots within the active segment; the one at the segment's base is kept)."""
    for o in list_snapshot_offsets(log_dir):
        if low < o < high:
            fs.unlink(snapshot_path(log_dir, o))


def delete_snapshots_before(log_dir: Path, offset: int) -> None:
    """On segment deletion: snapshots older than the log start offset are useless."""
    for o in list_snapshot_offsets(log_dir):
        if o < offset:
            snapshot_path(log_dir, o).unlink(missing_ok=True)
