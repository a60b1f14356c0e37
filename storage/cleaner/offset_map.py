"""The cleaner's key map (Kafka's SkimpyOffsetMap) and the one record walk that fills it.

Kafka maps the MD5 of each key to its latest offset in a fixed buffer of 24 bytes a slot. A Python
dict slot with its key and offset objects costs about 128 bytes whatever is done, so the map keeps
keys of up to 16 bytes as they are (no hashing cost, no collision) and a 16-byte BLAKE2b digest of
longer ones, as Kafka's 16-byte MD5: an entry then costs at most BYTES_PER_MAP_ENTRY, and
log.cleaner.dedupe.buffer.size bounds the map's memory whatever the keys' sizes.

The walk reads a batch's records once, straight from the (decompressed) bytes: no per-record
objects, the one-byte varints (nearly every attribute, delta and key length) decoded inline.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left, bisect_right
from typing import Final

from protocol.record_batch import BATCH_HEADER, RecordBatchHeader
from protocol.records import decode_varint, decompress

__all__ = ("BYTES_PER_MAP_ENTRY", "OffsetMap", "map_key")

# A dict slot (~40 bytes at 2/3 load), a bytes object of at most 16 bytes (49) and an int (32).
BYTES_PER_MAP_ENTRY: Final = 128
_MAX_PLAIN_KEY: Final = 16


def map_key(key: bytes) -> bytes:
    """What the map holds for key: the key itself, or the digest of a long one."""
    if len(key) <= _MAX_PLAIN_KEY:
        return key
    return hashlib.blake2b(key, digest_size=_MAX_PLAIN_KEY).digest()


class OffsetMap:
    """Key -> latest offset in the dirty section, plus what the copy pass asks of it per batch."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.offsets: dict[bytes, int] = {}
        # Base offsets of the mapped batches that hold a tombstone: such a batch, even when all its
        # records stay, is rewritten to carry a delete horizon.
        self.tombstone_batches: set[int] = set()
        self._latest: array[int] = array("q")

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def full(self) -> bool:
        return len(self.offsets) >= self.capacity

    def get(self, key: bytes, default: int) -> int:
        return self.offsets.get(map_key(key), default)

    def add_batch(self, batch: bytes | memoryview, header: RecordBatchHeader, first_dirty: int) -> None:
        """Map every keyed record of the batch at or after first_dirty (one walk of its records)."""
        body = bytes(batch[BATCH_HEADER.size : header.size])
        if header.compression:
            body = decompress(header.compression, body)
        if _map_records(self.offsets, body, header.records_count, header.base_offset, first_dirty):
            self.tombstone_batches.add(header.base_offset)

    def freeze(self) -> None:
        """After the last add_batch: index the kept offsets for kept_in()."""
        self._latest = array("q", sorted(self.offsets.values()))

    def kept_in(self, first: int, last: int) -> int:
        """How many records in [first, last] are their key's latest (after freeze())."""
        return bisect_right(self._latest, last) - bisect_left(self._latest, first)


def _map_records(offsets: dict[bytes, int], body: bytes, count: int, base_offset: int, first_dirty: int) -> bool:
    """Fill offsets from the records in body; True if one has a null value. Hot: one pass over
    every dirty record, hence inlined one- and two-byte varints (zigzag: n decodes as n>>1 ^ -(n&1))."""
    pos = 0
    tombstone = False
    for _ in range(count):
        n = body[pos]
        if n < 0x80:
            length, pos = (n >> 1) ^ -(n & 1), pos + 1
        elif body[pos + 1] < 0x80:  # a record of 64 to 8191 bytes
            n = (n & 0x7F) | body[pos + 1] << 7
            length, pos = (n >> 1) ^ -(n & 1), pos + 2
        else:
            length, pos = decode_varint(body, pos)
        end = pos + length
        p = pos + 1  # after the attributes byte
        while body[p] & 0x80:  # the timestamp delta, not needed
            p += 1
        n = body[p + 1]
        if n < 0x80:
            delta, p = (n >> 1) ^ -(n & 1), p + 2
        else:
            delta, p = decode_varint(body, p + 1)
        n = body[p]
        if n < 0x80:
            key_len, p = (n >> 1) ^ -(n & 1), p + 1
        else:
            key_len, p = decode_varint(body, p)
        offset = base_offset + delta
        if key_len >= 0 and offset >= first_dirty:
            key = body[p : p + key_len]
            offsets[key if key_len <= _MAX_PLAIN_KEY else map_key(key)] = offset
            # A negative value length (null: -1) zigzags to an odd first byte.
            if body[p + key_len] & 1:
                tombstone = True
        pos = end
    return tombstone
