"""Valid requests of every API and version the broker parses, and mutations of them that lie about
lengths and counts: the inputs of the frame fuzz tests (tests/protocol/test_bounds.py, in memory,
and tests/e2e/test_fuzz_frames.py, against the broker process).

A sample request fills every field, tagged fields included, and gives every array two elements, so
that each count and length of the schema appears somewhere in the encoded frame; the mutations then
overwrite or insert, at every byte position, the values that make a reader over-allocate or
mis-step (huge, negative and null counts and lengths in each of Kafka's encodings).
"""

from __future__ import annotations

import datetime
import random
import uuid
from collections.abc import Iterator
from dataclasses import fields
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
)

from protocol.codec import request_schema
from protocol.records import Record, build_batch
from tests.kafka_wire import encode_request

# Header fields that every mutation leaves alone, so that the frame still names its API and
# version and reaches that API's parser (api_key int16 + api_version int16).
HEADER_KEEP = 4

# Big-endian int32 / int16 extremes, compact (uvarint) extremes, an over-long varint, and null.
PATTERNS: tuple[bytes, ...] = (
    b"\x7f\xff\xff\xff",  # int32 max
    b"\xff\xff\xff\xfe",  # int32 -2
    b"\x80\x00\x00\x00",  # int32 min
    b"\x00\x10\x00\x00",  # int32 1 Mi: plausible, still more than remains
    b"\x7f\xff",  # int16 max
    b"\xff\xfe",  # int16 -2
    b"\xff\xff",  # -1: null
    b"\xff\xff\xff\xff\x0f",  # uvarint 2^32-1: a compact count of 2^32-2
    b"\x80\x80\x80\x80\x08",  # uvarint 2^31
    b"\xff\xff\xff\xff\xff\xff",  # varint longer than 5 bytes
    b"\x00",  # compact null
)

_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)
_RECORDS = build_batch([Record(key=b"k", value=b"v")])


def _value(kafka_type: str) -> Any:
    match kafka_type:
        case "string":
            return "ab"
        case "bytes":
            return b"ab"
        case "records":
            return _RECORDS
        case "bool":
            return True
        case "error_code":
            return ErrorCode.none
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(milliseconds=5)
        case "datetime_i64":
            return _EPOCH + datetime.timedelta(milliseconds=5)
        case "uuid":
            return uuid.UUID(int=7)
        case "float64":
            return 1.5
    return 1


def sample(entity_type: type[Any]) -> Any:
    """An instance of a kio entity with every field set and every array two elements long."""
    kwargs = {}
    for field in fields(entity_type):
        match classify_field(field):
            case EntityField(nested):
                kwargs[field.name] = sample(nested)
            case EntityTupleField(nested):
                kwargs[field.name] = (sample(nested), sample(nested))
            case PrimitiveField():
                kwargs[field.name] = _value(field.metadata["kafka_type"])
            case PrimitiveTupleField():
                kwargs[field.name] = (_value(field.metadata["kafka_type"]),) * 2
    return entity_type(**kwargs)


@cache
def sample_frame(api_key: int, version: int, correlation_id: int = 1) -> bytes:
    """The encoded request (header + body, no size prefix) of `sample` for that API version."""
    return encode_request(sample(request_schema(api_key, version)), correlation_id, "fuzz")


def count_mutations(frame: bytes) -> Iterator[bytes]:
    """Every pattern written over, and inserted at, every position after HEADER_KEEP."""
    for pos in range(HEADER_KEEP, len(frame)):
        for pattern in PATTERNS:
            yield frame[:pos] + pattern + frame[pos + len(pattern):]
            yield frame[:pos] + pattern + frame[pos:]


def count_mutation(frame: bytes, rng: random.Random) -> bytes:
    """One of count_mutations, drawn at random."""
    pos = rng.randrange(HEADER_KEEP, len(frame))
    pattern = rng.choice(PATTERNS)
    return frame[:pos] + pattern + frame[pos + rng.choice((0, len(pattern))):]


def random_mutation(frame: bytes, rng: random.Random) -> bytes:
    """One of: a pattern at a random position, bit flips, truncation, or random bytes appended."""
    pos = rng.randrange(HEADER_KEEP, len(frame))
    match rng.randrange(4):
        case 0:
            return count_mutation(frame, rng)
        case 1:
            out = bytearray(frame)
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(HEADER_KEEP, len(out))
                out[at] ^= 1 << rng.randrange(8)
            return bytes(out)
        case 2:
            return frame[:pos]
    return frame + rng.randbytes(rng.randint(1, 16))
