"""Rewriting one record batch with only the records the cleaner keeps (Kafka's MemoryRecords.filterTo).

The cleaner is the one place on the broker that decodes client records: it must see keys and
values. A rewritten batch keeps the original base offset, last offset delta (so the producer's last
sequence survives), producer id, epoch, base sequence, partition leader epoch, timestamp type and
codec; the CRC is recomputed. A batch that first keeps a tombstone or an emptied transaction's
marker gets Kafka's delete horizon (KIP-534): attribute bit 0x40, with the base timestamp holding
the time after which the tombstone or marker may go; record timestamps are re-expressed against it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import cramjam
from crc32c import crc32c

from protocol.record_batch import BATCH_HEADER, LOG_OVERHEAD, CompressionType, RecordBatchHeader
from protocol.records import decode_varint, decompress, encode_varint

__all__ = ("DELETE_HORIZON_BIT", "RawRecord", "build_filtered_batch", "decode_raw_records",
           "delete_horizon_ms", "empty_batch", "keyless_records")

DELETE_HORIZON_BIT: Final = 0x40
_COMPRESSION_MASK: Final = 0x07
_KEEP_FLAGS: Final = 0x08 | 0x10 | 0x20  # timestamp type, transactional, control
_CRC_AT: Final = struct.calcsize(">qiib")
_CRC_FROM: Final = _CRC_AT + 4
_XERIAL_HEADER: Final = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK: Final = 32 * 1024


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record as stored: its absolute offset and timestamp, key, value and the record's bytes
    from the key on (key, value and headers exactly as written)."""

    offset: int
    timestamp: int
    attributes: int
    key: bytes | None
    has_value: bool
    tail: bytes


def delete_horizon_ms(header: RecordBatchHeader) -> int | None:
    return header.base_timestamp if header.attributes & DELETE_HORIZON_BIT else None


def decode_raw_records(batch: bytes | memoryview, header: RecordBatchHeader) -> list[RawRecord]:
    """Every record of the batch (decompressed), keeping each record's bytes for re-encoding."""
    body = bytes(batch[BATCH_HEADER.size : header.size])
    if header.compression:
        body = decompress(header.compression, body)
    out, pos = [], 0
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    for _ in range(header.records_count):
        length, pos = _varint(body, pos)
        end = pos + length
        attributes = body[pos]
        ts_delta, p = _varint(body, pos + 1)
        off_delta, p = _varint(body, p)
        tail_at = p
        key_len, p = _varint(body, p)
        key = None if key_len < 0 else body[p : p + key_len]
        p += max(key_len, 0)
        # A negative value length (null: -1) zigzags to an odd first byte.
        out.append(RawRecord(base_offset + off_delta, base_timestamp + ts_delta, attributes, key, not body[p] & 1,
                             body[tail_at:end]))
        pos = end
    return out


def _varint(body: bytes, pos: int) -> tuple[int, int]:
    """decode_varint, with the one- and two-byte cases (nearly every field of a record) inline."""
    n = body[pos]
    if n < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 1
    m = body[pos + 1]
    if m < 0x80:
        n = (n & 0x7F) | m << 7
        return (n >> 1) ^ -(n & 1), pos + 2
    return decode_varint(body, pos)


def _encode_records(records: Sequence[RawRecord], base_offset: int, base_timestamp: int) -> bytes:
    parts = []
    for r in records:
        body = bytes((r.attributes,)) + encode_varint(r.timestamp - base_timestamp) + \
            encode_varint(r.offset - base_offset) + r.tail
        parts.append(encode_varint(len(body)))
        parts.append(body)
    return b"".join(parts)


def compress(codec: int, data: bytes, xerial: bool) -> bytes:
    match codec:
        case CompressionType.NONE:
            return data
        case CompressionType.GZIP:
            return bytes(cramjam.gzip.compress(data))
        case CompressionType.SNAPPY:
            if not xerial:
                return bytes(cramjam.snappy.compress_raw(data))
            # Java producers frame snappy in xerial blocks: keep the framing they wrote.
            blocks = [_XERIAL_HEADER]
            for at in range(0, len(data), _XERIAL_BLOCK):
                block = bytes(cramjam.snappy.compress_raw(data[at : at + _XERIAL_BLOCK]))
                blocks += (struct.pack(">i", len(block)), block)
            return b"".join(blocks)
        case CompressionType.LZ4:
            # Kafka's Java reader (Lz4BlockInputStream) takes independent blocks only.
            compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
            compressor.compress(data)
            return bytes(compressor.finish())
        case CompressionType.ZSTD:
            return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _pack(header: RecordBatchHeader, attributes: int, base_timestamp: int, max_timestamp: int,
          count: int, body: bytes) -> bytes:
    buf = bytearray(BATCH_HEADER.size) + body
    BATCH_HEADER.pack_into(
        buf, 0, header.base_offset, BATCH_HEADER.size - LOG_OVERHEAD + len(body), header.partition_leader_epoch,
        2, 0, attributes, header.last_offset_delta, base_timestamp, max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, count,
    )
    struct.pack_into(">I", buf, _CRC_AT, crc32c(memoryview(buf)[_CRC_FROM:]))
    return bytes(buf)


def build_filtered_batch(original: bytes | memoryview, header: RecordBatchHeader, kept: Sequence[RawRecord],
                         new_delete_horizon: int | None) -> bytes:
    """The batch holding only kept (at least one), in the original codec. With new_delete_horizon,
    the batch is marked with that delete horizon."""
    horizon = delete_horizon_ms(header) if new_delete_horizon is None else new_delete_horizon
    attributes = header.attributes
    if horizon is not None:
        attributes |= DELETE_HORIZON_BIT
        base_timestamp = horizon
    else:
        base_timestamp = min(r.timestamp for r in kept)
    if header.log_append_time:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(r.timestamp for r in kept)
    body = _encode_records(kept, header.base_offset, base_timestamp)
    codec = header.compression
    xerial = codec == CompressionType.SNAPPY and bytes(original[BATCH_HEADER.size : BATCH_HEADER.size + 8]) \
        == _XERIAL_HEADER[:8]
    return _pack(header, attributes, base_timestamp, max_timestamp, len(kept), compress(codec, body, xerial))


def empty_batch(header: RecordBatchHeader) -> bytes:
    """A batch with no records that keeps the original's offsets and producer fields (Kafka's
    writeEmptyHeader): what the cleaner leaves of a live producer's last batch."""
    attributes = header.attributes & _KEEP_FLAGS
    return _pack(header, attributes, header.max_timestamp, header.max_timestamp, 0, b"")


def keyless_records(batch: bytes | memoryview, pos: int, header: RecordBatchHeader) -> list[int]:
    """The indexes of the records without a key in the batch at pos. Only compacted topics pay
    for this walk (a compressed batch is decompressed, as Kafka's LogValidator does)."""
    body: bytes | memoryview = memoryview(batch)[pos + BATCH_HEADER.size : pos + header.size]
    if header.compression:
        body = decompress(header.compression, bytes(body))
    at, keyless = 0, []
    for i in range(header.records_count):
        length, start = decode_varint(body, at)
        _ts_delta, p = decode_varint(body, start + 1)  # after the record's attributes byte
        _offset_delta, p = decode_varint(body, p)
        key_len, _ = decode_varint(body, p)
        if key_len < 0:
            keyless.append(i)
        at = start + length
    return keyless
