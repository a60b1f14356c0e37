"""Bounds pre-check of request frames, run before kio's native reader sees them.

kio's array readers reserve room for the element count they read before reading any element: a
21-byte Metadata v12 request whose compact topic array claims 2^32-2 elements asks for 32 GiB and
the allocator aborts the whole process (a Rust abort, not an exception). So every length and count
in a frame is checked against the bytes that remain before the frame is parsed. The check walks
the same schema kio reads (fields in order, tagged fields, nested and nullable entities), taken
from kio's entity dataclasses, and allocates nothing. An array may claim at most as many elements
as the remaining bytes could hold at the element's smallest encoded size, so a parse that passes
the check allocates in proportion to the frame, which socket.request.max.bytes already bounds.

Each entity type compiles once into a walker `(buf, pos, end) -> pos`; runs of fixed-size fields
fold into one skip and arrays of fixed-size elements are checked in one step, so the walk costs a
few Python calls per variable-length item.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, Final

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from .errors import ErrorCode, KafkaError

__all__ = ("FrameBoundsError", "request_walker")

# (buffer, position, end of the enclosing region) -> position after the item.
Walk = Callable[[bytes, int, int], int]

_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")

# Encoded size of each fixed-size Kafka type (kio's names).
_FIXED: Final[Mapping[str, int]] = {
    "bool": 1, "int8": 1, "uint8": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}
# Length prefix of strings (int16) and of bytes and records (int32) in non-flexible versions.
_LEGACY_LENGTH: Final[Mapping[str, struct.Struct]] = {"string": _INT16, "bytes": _INT32, "records": _INT32}


class FrameBoundsError(KafkaError):
    """A length or count in the frame reaches past the bytes that remain."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.invalid_request, message)


@dataclass(frozen=True, slots=True)
class _Shape:
    """How one item is laid out: `fixed` bytes, or a walker; `least` is its smallest encoding."""

    least: int
    fixed: int | None = None
    walk: Walk | None = None


def _overrun(what: str, pos: int, need: int, end: int) -> FrameBoundsError:
    return FrameBoundsError(f"{what} at byte {pos} needs {need} bytes, {max(end - pos, 0)} remain")


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's limit for 32-bit values)."""
    value = shift = 0
    start = pos
    while pos < end:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise FrameBoundsError(f"varint at byte {start} is longer than 5 bytes")
    raise _overrun("varint", start, 1, end)


def _read_length(buf: bytes, pos: int, end: int, legacy: struct.Struct | None) -> tuple[int, int]:
    """A length or count: a signed int16/int32, or a compact uvarint holding length + 1.
    -1 is null; any other negative is refused here (kio's readers would refuse it later)."""
    if legacy is None:
        if pos < end and buf[pos] < 0x80:  # one-byte varint: the common case, kept inline
            return buf[pos] - 1, pos + 1
        raw, after = _uvarint(buf, pos, end)
        return raw - 1, after
    if pos + legacy.size > end:
        raise _overrun("length", pos, legacy.size, end)
    (length,) = legacy.unpack_from(buf, pos)
    if length < -1:
        raise FrameBoundsError(f"negative length {length} at byte {pos}")
    return length, pos + legacy.size


def _sized(kafka_type: str, flexible: bool) -> _Shape:
    """A string, bytes or records field: length prefix, then that many bytes."""
    legacy = None if flexible else _LEGACY_LENGTH[kafka_type]

    def walk(buf: bytes, pos: int, end: int) -> int:
        length, after = _read_length(buf, pos, end, legacy)
        if after + length > end:
            raise _overrun(kafka_type, after, length, end)
        return after + length if length > 0 else after

    return _Shape(least=1 if legacy is None else legacy.size, walk=walk)


def _array(item: _Shape, flexible: bool) -> _Shape:
    legacy = None if flexible else _INT32
    least = max(item.least, 1)
    fixed, walk_item = item.fixed, item.walk

    def walk(buf: bytes, pos: int, end: int) -> int:
        count, after = _read_length(buf, pos, end, legacy)
        if count * least > end - after:
            raise FrameBoundsError(
                f"array at byte {pos} claims {count} items of at least {least} bytes; "
                f"{end - after} bytes remain")
        if count <= 0:
            return after
        if fixed is not None:
            return after + count * fixed
        assert walk_item is not None
        for _ in range(count):
            after = walk_item(buf, after, end)
        return after

    return _Shape(least=1 if legacy is None else 4, walk=walk)


def _nullable(entity: _Shape) -> _Shape:
    """KIP-893 nullable struct: an int8 marker, -1 for null, then the entity."""
    inner = _as_walk(entity)

    def walk(buf: bytes, pos: int, end: int) -> int:
        if pos >= end:
            raise _overrun("nullable struct marker", pos, 1, end)
        return pos + 1 if buf[pos] == 0xFF else inner(buf, pos + 1, end)

    return _Shape(least=1, walk=walk)


def _as_walk(shape: _Shape) -> Walk:
    if shape.walk is not None:
        return shape.walk
    size = shape.fixed
    assert size is not None

    def skip(buf: bytes, pos: int, end: int) -> int:
        if pos + size > end:
            raise _overrun("field", pos, size, end)
        return pos + size

    return skip


def _field(field: Any, flexible: bool, is_request_header: bool, is_tag: bool) -> _Shape:
    # kio (after Kafka) always writes RequestHeader.client_id as a nullable int16 string.
    if is_request_header and field.name == "client_id":
        return _sized("string", False)
    match classify_field(field):
        case EntityField(entity_type):
            # Tagged fields are optional by their absence, not by a null marker.
            optional = is_optional(field) and not is_tag
            return _nullable(_entity(entity_type)) if optional else _entity(entity_type)
        case EntityTupleField(entity_type):
            return _array(_entity(entity_type), flexible)
        case PrimitiveField():
            return _primitive(get_schema_field_type(field), flexible)
        case PrimitiveTupleField():
            return _array(_primitive(get_schema_field_type(field), flexible), flexible)
    raise TypeError(f"unexpected field {field.name}")  # pragma: no cover - kio classifies all


def _primitive(kafka_type: str, flexible: bool) -> _Shape:
    size = _FIXED.get(kafka_type)
    return _Shape(least=size, fixed=size) if size is not None else _sized(kafka_type, flexible)


def _tagged_fields(tags: Mapping[int, Walk]) -> Walk:
    """The tagged-field section of a flexible entity: count, then (tag, size, value) each."""

    def walk(buf: bytes, pos: int, end: int) -> int:
        if pos < end and buf[pos] == 0:  # the usual case: no tagged fields
            return pos + 1
        count, pos = _uvarint(buf, pos, end)
        if count * 2 > end - pos:
            raise FrameBoundsError(f"{count} tagged fields claimed, {end - pos} bytes remain")
        for _ in range(count):
            tag, pos = _uvarint(buf, pos, end)
            size, pos = _uvarint(buf, pos, end)
            if pos + size > end:
                raise _overrun(f"tagged field {tag}", pos, size, end)
            if (walk_value := tags.get(tag)) is not None:
                walk_value(buf, pos, pos + size)  # a known tag's value must fit inside its size
            pos += size
        return pos

    return walk


@cache
def _entity(entity_type: type[Any]) -> _Shape:
    flexible: bool = entity_type.__flexible__
    is_header = entity_type.__name__ == "RequestHeader"
    steps: list[int | Walk] = []
    tags: dict[int, Walk] = {}
    least = 1 if flexible else 0
    for field in fields(entity_type):
        tag = get_field_tag(field)
        shape = _field(field, flexible, is_header, tag is not None)
        if tag is not None:
            tags[int(tag)] = _as_walk(shape)
            continue
        least += shape.least
        if shape.fixed is None:
            steps.append(_as_walk(shape))
        elif steps and isinstance(steps[-1], int):
            steps[-1] += shape.fixed
        else:
            steps.append(shape.fixed)
    if not flexible and all(isinstance(step, int) for step in steps):
        return _Shape(least=least, fixed=least)
    return _Shape(least=least, walk=_entity_walk(tuple(steps), _tagged_fields(tags) if flexible else None))


def _entity_walk(steps: tuple[int | Walk, ...], tagged: Walk | None) -> Walk:
    def walk(buf: bytes, pos: int, end: int) -> int:
        for step in steps:
            if step.__class__ is int:
                pos += step  # type: ignore[operator]
            else:
                pos = step(buf, pos, end)  # type: ignore[operator]
        if pos > end:
            raise FrameBoundsError(f"fields end at byte {pos}, past the end of their region at {end}")
        return pos if tagged is None else tagged(buf, pos, end)

    return walk


@cache
def request_walker(header_type: type[Any], body_type: type[Any]) -> Callable[[bytes], None]:
    """A check of a whole request frame (header, then body); raises FrameBoundsError."""
    walk_header = _as_walk(_entity(header_type))
    walk_body = _as_walk(_entity(body_type))

    def check(frame: bytes) -> None:
        end = len(frame)
        walk_body(frame, walk_header(frame, 0, end), end)

    return check
