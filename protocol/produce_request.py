"""Produce requests (v3-13) read by hand, without kio: the request that carries the data.

kio's generic path cost a 64 KiB Produce ~16-19 us: protocol/bounds.py's walk (~3.6 us), kio's
header and body readers (~5-8 us, copying the records), and dispatch's null check (~2.5 us).
This reader does all three in one pass over the fields: every length and count is checked
against the bytes that remain before anything is sliced or looped over (so a lying count
allocates nothing), and a null where Kafka's schema forbids one is refused with the path
dispatch's check gives. `records` is a slice of the frame: a view, not a copy, when the frame is
a large frame's memoryview (protocol/frames.py), which it then keeps alive.

Layouts are Kafka's RequestHeader.json (v1 for Produce v3-8; v2, with tagged fields, for v9+:
client_id keeps its INT16 length there) and ProduceRequest.json (flexible from v9: compact
strings, arrays and bytes, and a tag buffer after each struct; v13 names topics by TopicId).
Produce has no tagged fields of its own, so every tag is skipped, as Kafka skips unknown ones.
Bytes after the body are ignored, as kio's reader ignores them.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final, NamedTuple

from .readable import (
    I32,
    UUID_SIZE,
    NullFieldError,
    Overrun,
    check_null,
    compact_count,
    compact_string,
    int32_count,
    overrun,
    read_uuid,
    refused,
    skip_tags,
    string,
    uvarint,
)

__all__ = (
    "VERSIONS",
    "NullFieldError",
    "PartitionProduceData",
    "ProduceRequest",
    "TopicProduceData",
    "read_produce_request",
)

VERSIONS: Final = range(3, 14)
_FLEXIBLE: Final = 9
_TOPIC_IDS: Final = 13
_HEADER: Final = 8  # api_key, api_version, correlation_id: read by codec.peek_header
_ACKS_TIMEOUT: Final = struct.Struct(">hi")
_INDEX_SIZE: Final = struct.Struct(">ii")  # v3-8: a partition's index and records length
Records = bytes | memoryview | None  # a slice of the request's frame
_new_tuple = tuple.__new__  # a NamedTuple's own __new__ is a Python call per item


class PartitionProduceData(NamedTuple):
    # Kafka's (and kio's) field name; as a tuple field it hides tuple.index, which nothing here calls.
    index: int  # type: ignore[assignment]
    records: Records  # nullable in the schema; the handler answers CORRUPT_MESSAGE


class TopicProduceData(NamedTuple):
    name: str | None  # v3-12
    topic_id: uuid.UUID | None  # v13; the zero UUID reads as None, as kio reads it
    partition_data: list[PartitionProduceData]


class ProduceRequest(NamedTuple):
    transactional_id: str | None
    acks: int
    timeout_ms: int  # Kafka's TimeoutMs (kio's `timeout`, a timedelta); the broker does not wait on it
    topic_data: list[TopicProduceData]


def read_produce_request(frame: bytes | memoryview, version: int) -> tuple[str | None, ProduceRequest]:
    """(client_id, body) of a whole Produce request frame of `version` (in VERSIONS)."""
    try:
        return _read_flexible(frame, version) if version >= _FLEXIBLE else _read_legacy(frame)
    except (Overrun, struct.error, IndexError, UnicodeDecodeError) as exc:
        raise refused(0, version, exc) from None


# Each item's least encoded size, which bounds how many items a count may claim.
_LEGACY_TOPIC: Final = 2 + 4  # an empty name, an empty partition array
_LEGACY_PARTITION: Final = 4 + 4  # index, records length
_COMPACT_TOPIC: Final = 1 + 1 + 1  # an empty name, an empty partition array, no tags
_COMPACT_TOPIC_BY_ID: Final = UUID_SIZE + 1 + 1  # v13: a TopicId in place of the name
_COMPACT_PARTITION: Final = 4 + 1 + 1  # index, null records, no tags

# The readers are written out, two loops each, rather than composed from a reader per field: a
# Python call costs about as much as the field it would read, and this runs for every Produce.


def _read_legacy(buf: bytes | memoryview) -> tuple[str | None, ProduceRequest]:
    """v3-8 (header v1): INT16-length strings, INT32-length bytes and INT32 counts, -1 for null."""
    end = len(buf)
    client_id, pos = string(buf, _HEADER, end)
    transactional_id, pos = string(buf, pos, end)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos)
    count, pos = int32_count(buf, pos + _ACKS_TIMEOUT.size, end, _LEGACY_TOPIC, "topic_data")
    topics = []
    for _ in range(count):
        name, pos = string(buf, pos, end)
        if name is None:
            raise NullFieldError("topic_data.name")
        count, pos = int32_count(buf, pos, end, _LEGACY_PARTITION, "topic_data.partition_data")
        partitions = []
        for _ in range(count):
            index, size = _INDEX_SIZE.unpack_from(buf, pos)
            pos += 8
            if size < 0:
                check_null(size, pos - 4)
                records = None
            elif (after := pos + size) <= end:
                records, pos = buf[pos:after], after
            else:
                raise overrun(pos, size, end)
            partitions.append(_new_tuple(PartitionProduceData, (index, records)))
        topics.append(_new_tuple(TopicProduceData, (name, None, partitions)))
    return client_id, _new_tuple(ProduceRequest, (transactional_id, acks, timeout_ms, topics))


def _read_flexible(buf: bytes | memoryview, version: int) -> tuple[str | None, ProduceRequest]:
    """v9+ (header v2): compact lengths and counts, unsigned varints of length + 1 (0 for null),
    and a tag buffer after each struct; the header's client_id keeps its INT16 length."""
    end = len(buf)
    client_id, pos = string(buf, _HEADER, end)
    pos = skip_tags(buf, pos, end) if buf[pos] else pos + 1
    transactional_id, pos = compact_string(buf, pos, end)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos)
    least = _COMPACT_TOPIC_BY_ID if version >= _TOPIC_IDS else _COMPACT_TOPIC
    count, pos = compact_count(buf, pos + _ACKS_TIMEOUT.size, end, least, "topic_data")
    topics, pos = _compact_topics(buf, pos, end, count, version >= _TOPIC_IDS)
    if buf[pos]:
        skip_tags(buf, pos, end)
    return client_id, _new_tuple(ProduceRequest, (transactional_id, acks, timeout_ms, topics))


def _compact_topics(buf: bytes | memoryview, pos: int, end: int, count: int,
                    by_id: bool) -> tuple[list[TopicProduceData], int]:
    topics = []
    for _ in range(count):
        name, topic_id = None, None
        if by_id:
            topic_id, pos = read_uuid(buf, pos, end)
        else:
            name, pos = compact_string(buf, pos, end)
            if name is None:
                raise NullFieldError("topic_data.name")
        count, pos = compact_count(buf, pos, end, _COMPACT_PARTITION, "topic_data.partition_data")
        partitions = []
        for _ in range(count):
            (index,) = I32.unpack_from(buf, pos)
            size, pos = uvarint(buf, pos + 4)
            if size == 0:
                records = None
            elif (after := pos + size - 1) <= end:
                records, pos = buf[pos:after], after
            else:
                raise overrun(pos, size - 1, end)
            partitions.append(_new_tuple(PartitionProduceData, (index, records)))
            pos = skip_tags(buf, pos, end) if buf[pos] else pos + 1
        topics.append(_new_tuple(TopicProduceData, (name, topic_id, partitions)))
        pos = skip_tags(buf, pos, end) if buf[pos] else pos + 1
    return topics, pos
