"""Building and reading whole record batches, for internal topics, control markers and tests.

The produce and fetch paths never use this module: they move batches as bytes. The broker itself
only builds batches it writes (markers, __consumer_offsets, __transaction_state) and reads them
back at start-up.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import cramjam
from crc32c import crc32c

from .record_batch import (
    BATCH_HEADER,
    LOG_OVERHEAD,
    CompressionType,
    RecordBatchHeader,
    iter_batches,
)

__all__ = ("Record", "build_batch", "decode_record", "decode_varint", "decompress", "encode_varint", "read_records")


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    offset: int = 0
    timestamp: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())


def encode_uvarint(value: int) -> bytes:
    """An unsigned varint (no zigzag), as flexible versions write lengths and tags."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    return encode_uvarint((value << 1) ^ (value >> 63))  # zigzag


def _read_varint(buf: bytes | memoryview, pos: int, max_shift: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > max_shift:
            raise ValueError("varint too long")


def decode_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it) of an unsigned 32-bit varint; IndexError past the end."""
    return _read_varint(buf, pos, 28)


def decode_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    result, pos = _read_varint(buf, pos, 63)
    return (result >> 1) ^ -(result & 1), pos


def _bytes_field(data: bytes | None) -> bytes:
    if data is None:
        return encode_varint(-1)
    return encode_varint(len(data)) + data


def _encode_record(delta: int, ts_delta: int, rec: Record) -> bytes:
    body = bytearray(b"\x00")
    body += encode_varint(ts_delta) + encode_varint(delta)
    body += _bytes_field(rec.key) + _bytes_field(rec.value)
    body += encode_varint(len(rec.headers))
    for name, value in rec.headers:
        body += _bytes_field(name.encode()) + _bytes_field(value)
    return encode_varint(len(body)) + bytes(body)


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = 0,
) -> bytearray:
    """An uncompressed magic-2 batch with CreateTime timestamps and a valid CRC."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    base_ts = records[0].timestamp
    body = b"".join(
        _encode_record(i, r.timestamp - base_ts, r) for i, r in enumerate(records)
    )
    attributes = (0x10 if transactional else 0) | (0x20 if control else 0)
    batch_length = BATCH_HEADER.size - LOG_OVERHEAD + len(body)
    buf = bytearray(BATCH_HEADER.size) + body
    BATCH_HEADER.pack_into(
        buf, 0, base_offset, batch_length, partition_leader_epoch, 2, 0, attributes,
        len(records) - 1, base_ts, max(r.timestamp for r in records), producer_id,
        producer_epoch, base_sequence, len(records),
    )
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[21:]))
    return buf


def decompress(codec: int, data: bytes) -> bytes:
    match codec:
        case CompressionType.NONE:
            return data
        case CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        case CompressionType.SNAPPY:
            return _snappy_xerial(data)
        case CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        case CompressionType.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _snappy_xerial(data: bytes) -> bytes:
    # Java clients frame snappy in xerial blocks; librdkafka sends raw snappy.
    if data[:8] == b"\x82SNAPPY\x00":
        out, pos = bytearray(), 16
        while pos < len(data):
            (n,) = struct.unpack_from(">i", data, pos)
            out += cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n])
            pos += 4 + n
        return bytes(out)
    return bytes(cramjam.snappy.decompress_raw(data))


def decode_record(buf: bytes | memoryview, pos: int, header: RecordBatchHeader) -> tuple[Record, int]:
    """The record at pos of a batch's (decompressed) records, and where the next one starts."""
    _length, pos = decode_varint(buf, pos)
    pos += 1  # record attributes, unused
    ts_delta, pos = decode_varint(buf, pos)
    off_delta, pos = decode_varint(buf, pos)
    fields: list[bytes | None] = []
    for _ in range(2):
        n, pos = decode_varint(buf, pos)
        fields.append(None if n < 0 else bytes(buf[pos : pos + n]))
        pos += max(n, 0)
    count, pos = decode_varint(buf, pos)
    headers = []
    for _ in range(count):
        n, pos = decode_varint(buf, pos)
        name = bytes(buf[pos : pos + n]).decode()
        pos += n
        n, pos = decode_varint(buf, pos)
        headers.append((name, None if n < 0 else bytes(buf[pos : pos + n])))
        pos += max(n, 0)
    rec = Record(
        offset=header.base_offset + off_delta,
        timestamp=header.base_timestamp + ts_delta,
        key=fields[0],
        value=fields[1],
        headers=tuple(headers),
    )
    return rec, pos


def read_records(data: bytes | memoryview) -> Iterator[tuple[RecordBatchHeader, list[Record]]]:
    """Decode every batch in data (any codec) into its records."""
    for pos, header in iter_batches(data):
        raw = bytes(data[pos + BATCH_HEADER.size : pos + header.size])
        body = decompress(header.compression, raw)
        records, p = [], 0
        for _ in range(header.records_count):
            rec, p = decode_record(body, p, header)
            records.append(rec)
        yield header, records


def concat(batches: Iterable[bytes | bytearray]) -> bytes:
    return b"".join(batches)
