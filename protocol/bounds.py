"""Bounds pre-check of request frames, run before kio's native reader sees them.

kio's array readers reserve room for the element count they read before reading any element: a
21-byte Metadata v12 request whose compact topic array claims 2^32-2 elements asks for 32 GiB and
the allocator aborts the whole process (a Rust abort, not an exception). So every length and count
in a frame is checked against the bytes that remain before the frame is parsed. The check walks
the same schema kio reads (fields in order, tagged fields, nested and nullable entities), taken
from kio's entity dataclasses, and allocates nothing. An array may claim at most as many elements
as the remaining bytes could hold at the element's smallest encoded size, so a parse that passes
the check allocates in proportion to the frame, which socket.request.max.bytes already bounds.

The walk runs on every request, so each entity type is compiled once, as kio's own serializers are
generated: into the source of one Python function whose nested loops follow the schema's nested
arrays. Runs of fixed-size fields become one addition, arrays of fixed-size items one
multiplication, and the common one-byte varints are read inline; only tagged fields that are
present, and the older non-flexible lengths, cost a call. (A walker of closures, one call per
field, cost twice as much.) `walker_source(entity_type)` shows what was compiled.

A tagged field the schema does not know raises UnknownTaggedField, and protocol/unknown_tags.py
walks the frame again to take it out (Kafka skips such fields, kio's reader refuses them).

Typing: the walk reads kio's schema classes (type[Entity]) and their dataclass fields by
reflection, whichever API and version a frame is.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, fields
from functools import cache
from typing import TYPE_CHECKING, Final, cast

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

from .errors import FrameBoundsError

if TYPE_CHECKING:
    from kio.static.protocol import Entity

__all__ = (
    "FrameBoundsError", "TaggedSection", "TaggedValue", "UnknownTaggedField", "recording", "request_walker",
    "walker_source",
)

# (buffer, position, end of the enclosing region) -> position after the item.
Walk = Callable[[bytes | memoryview, int, int], int]

# Encoded size of each fixed-size Kafka type (kio's names).
_FIXED: Final[Mapping[str, int]] = {
    "bool": 1, "int8": 1, "uint8": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}
# Length prefix of strings (int16) and of bytes and records (int32) in non-flexible versions.
_LEGACY_PREFIX: Final[Mapping[str, int]] = {"string": 2, "bytes": 4, "records": 4}
_ARRAY_PREFIX: Final = 4


# -- what the compiled code calls -----------------------------------------------------------------


def _overrun(what: str, pos: int, need: int, end: int) -> FrameBoundsError:
    return FrameBoundsError(f"{what} at byte {pos} needs {need} bytes, {max(end - pos, 0)} remain")


def _too_many(pos: int, count: int, least: int, end: int) -> FrameBoundsError:
    return FrameBoundsError(
        f"array at byte {pos} claims {count} items of at least {least} bytes; {end - pos} bytes remain")


def _past(pos: int, end: int) -> FrameBoundsError:
    return FrameBoundsError(f"fields end at byte {pos}, past the end of their region at {end}")


def _uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
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


def _compact_length(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """A compact length or count: a uvarint holding length + 1 (so -1 is null)."""
    raw, after = _uvarint(buf, pos, end)
    return raw - 1, after


def _legacy_length(size: int) -> Callable[[bytes, int, int], tuple[int, int]]:
    """A signed int16/int32 length or count: -1 is null, any other negative is refused."""
    unpack = struct.Struct(">h" if size == 2 else ">i").unpack_from

    def read(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
        if pos + size > end:
            raise _overrun("length", pos, size, end)
        (length,) = unpack(buf, pos)
        if length < -1:
            raise FrameBoundsError(f"negative length {length} at byte {pos}")
        return length, pos + size

    return read


class UnknownTaggedField(Exception):
    """A tagged field the schema does not know. Kafka skips those (KIP-482), kio refuses them:
    protocol/unknown_tags.py takes them out of the frame before kio reads it."""


@dataclass(frozen=True, slots=True)
class TaggedValue:
    """One known tagged field: tag, size and value spans, and the sections nested in its value."""

    tag_start: int
    size_start: int
    value_start: int
    value_end: int
    nested: list[TaggedSection]


@dataclass(frozen=True, slots=True)
class TaggedSection:
    """A tagged-field section (count, then fields) and the known fields in it."""

    start: int
    end: int
    known: list[TaggedValue]


# While protocol/unknown_tags.py walks a frame, `sections` is the list the sections being walked
# go into (per thread, as an embedding host may parse in several). Otherwise an unknown tag raises.
recording = threading.local()


def _tagged_fields(tags: Mapping[int, Walk]) -> Walk:
    """The tagged-field section of a flexible entity: count, then (tag, size, value) each."""

    def walk(buf: bytes | memoryview, pos: int, end: int) -> int:
        start = pos
        count, pos = _uvarint(buf, pos, end)
        if count * 2 > end - pos:
            raise FrameBoundsError(f"{count} tagged fields claimed, {end - pos} bytes remain")
        sections: list[TaggedSection] | None = getattr(recording, "sections", None)
        known: list[TaggedValue] = []
        for _ in range(count):
            tag_start = pos
            tag, pos = _uvarint(buf, pos, end)
            size_start = pos
            size, pos = _uvarint(buf, pos, end)
            if pos + size > end:
                raise _overrun(f"tagged field {tag}", pos, size, end)
            walk_value = tags.get(tag)
            if walk_value is None and sections is None:
                raise UnknownTaggedField(tag)
            if walk_value is not None:
                nested: list[TaggedSection] = []
                if sections is not None:
                    recording.sections = nested
                walk_value(buf, pos, pos + size)  # a known tag's value must fit inside its size
                if sections is not None:
                    recording.sections = sections
                    known.append(TaggedValue(tag_start, size_start, pos, pos + size, nested))
            pos += size
        if sections is not None:
            sections.append(TaggedSection(start, pos, known))
        return pos

    return walk


_NAMESPACE: Final[Mapping[str, object]] = {
    "_overrun": _overrun, "_too_many": _too_many, "_past": _past, "_compact_length": _compact_length,
    "_legacy16": _legacy_length(2), "_legacy32": _legacy_length(4),
}


# -- layout: smallest encodings, fixed sizes --------------------------------------------------------


def _is_client_id(field: Field[object], is_request_header: bool) -> bool:
    # kio (after Kafka) always writes RequestHeader.client_id as a nullable int16 string.
    return is_request_header and field.name == "client_id"


@cache
def _entity_layout(entity_type: type[Entity]) -> tuple[int, int | None]:
    """(smallest encoding, fixed size or None) of an entity; only a non-flexible entity of
    fixed-size fields has a fixed size (a flexible one ends in its tagged fields)."""
    flexible: bool = entity_type.__flexible__
    is_header = entity_type.__name__ == "RequestHeader"
    least, all_fixed = (1 if flexible else 0), not flexible
    for field in fields(entity_type):
        if get_field_tag(field) is None:
            field_least, fixed = _field_layout(field, flexible, is_header)
            least += field_least
            all_fixed = all_fixed and fixed is not None
    return least, least if all_fixed else None


def _field_layout(field: Field[object], flexible: bool, is_request_header: bool) -> tuple[int, int | None]:
    if _is_client_id(field, is_request_header):
        return 2, None
    match classify_field(field):
        case EntityField(entity_type):
            return (1, None) if is_optional(field) else _entity_layout(entity_type)
        case PrimitiveField():
            kafka_type = get_schema_field_type(field)
            size = _FIXED.get(kafka_type)
            if size is not None:
                return size, size
            return (1 if flexible else _LEGACY_PREFIX[kafka_type]), None
    return (1 if flexible else _ARRAY_PREFIX), None  # arrays


# -- code generation ------------------------------------------------------------------------------


class _Source:
    """The lines of one generated function and the objects they refer to."""

    def __init__(self) -> None:
        self.lines: list[str] = ["def walk(buf, pos, end):"]
        self.namespace: dict[str, object] = dict(_NAMESPACE)  # exec's globals: what the generated source names
        self._names = 0

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def name(self, prefix: str, obj: object = None) -> str:
        self._names += 1
        name = f"{prefix}{self._names}"
        if obj is not None:
            self.namespace[name] = obj
        return name

    def compile(self) -> Walk:
        self.line(1, "return pos")
        exec("\n".join(self.lines), self.namespace)  # noqa: S102 - our own generated source
        walk = cast(Walk, self.namespace["walk"])
        walk.__doc__ = "\n".join(self.lines)
        return walk


def _emit_length(src: _Source, var: str, legacy_size: int | None, d: int) -> None:
    """Read a length or count into `var` and move `pos` past it."""
    if legacy_size is not None:
        src.line(d, f"{var}, pos = _legacy{legacy_size * 8}(buf, pos, end)")
        return
    src.line(d, "if pos < end and buf[pos] < 0x80:")  # varints of one or two bytes, inline
    src.line(d + 1, f"{var} = buf[pos] - 1")
    src.line(d + 1, "pos += 1")
    src.line(d, "elif pos + 1 < end and buf[pos + 1] < 0x80:")
    src.line(d + 1, f"{var} = (buf[pos] & 0x7F | buf[pos + 1] << 7) - 1")
    src.line(d + 1, "pos += 2")
    src.line(d, "else:")
    src.line(d + 1, f"{var}, pos = _compact_length(buf, pos, end)")


def _emit_sized(src: _Source, kafka_type: str, flexible: bool, d: int) -> None:
    """A string, bytes or records value: length prefix, then that many bytes."""
    _emit_length(src, "n", None if flexible else _LEGACY_PREFIX[kafka_type], d)
    src.line(d, "if n > 0:")
    src.line(d + 1, "pos += n")
    src.line(d + 1, f"if pos > end: raise _overrun({kafka_type!r}, pos - n, n, end)")


def _emit_array(src: _Source, flexible: bool, item: tuple[int, int | None],
                emit_item: Callable[[int], None], d: int) -> None:
    count = src.name("count")
    least, fixed = max(item[0], 1), item[1]
    _emit_length(src, count, None if flexible else _ARRAY_PREFIX, d)
    src.line(d, f"if {count} * {least} > end - pos: raise _too_many(pos, {count}, {least}, end)")
    if fixed is not None:
        src.line(d, f"if {count} > 0: pos += {count} * {fixed}")
        return
    src.line(d, f"for _ in range({count}):")  # null (-1) gives no iteration
    emit_item(d + 1)


def _emit_field(src: _Source, field: Field[object], flexible: bool, is_request_header: bool, is_tag: bool,
                d: int) -> None:
    if _is_client_id(field, is_request_header):
        _emit_sized(src, "string", False, d)
        return
    match classify_field(field):
        case EntityField(entity_type) if is_optional(field) and not is_tag:
            # KIP-893 nullable struct: an int8 marker, -1 for null. (A tagged struct is optional
            # by its absence instead.)
            src.line(d, "if pos >= end: raise _overrun('nullable struct marker', pos, 1, end)")
            src.line(d, "pos += 1")
            src.line(d, "if buf[pos - 1] != 0xFF:")
            _emit_entity(src, entity_type, d + 1)
        case EntityField(entity_type):
            _emit_entity(src, entity_type, d)
        case EntityTupleField(entity_type):
            _emit_array(src, flexible, _entity_layout(entity_type),
                        lambda depth: _emit_entity(src, entity_type, depth), d)
        case PrimitiveField() | PrimitiveTupleField() as kind:
            kafka_type = get_schema_field_type(field)
            size = _FIXED.get(kafka_type)

            def emit_value(depth: int) -> None:
                if size is not None:
                    src.line(depth, f"pos += {size}")
                else:
                    _emit_sized(src, kafka_type, flexible, depth)

            if isinstance(kind, PrimitiveField):
                emit_value(d)
            else:
                item = (size, size) if size is not None else (1 if flexible else _LEGACY_PREFIX[kafka_type], None)
                _emit_array(src, flexible, item, emit_value, d)


def _emit_entity(src: _Source, entity_type: type[Entity], d: int) -> None:
    flexible: bool = entity_type.__flexible__
    is_header = entity_type.__name__ == "RequestHeader"
    tags: dict[int, Walk] = {}
    skip = 0  # fixed-size fields not yet added to pos
    for field in fields(entity_type):
        if (tag := get_field_tag(field)) is not None:
            tags[int(tag)] = _field_walker(field, flexible, is_header)
            continue
        fixed = _field_layout(field, flexible, is_header)[1]
        if fixed is not None:
            skip += fixed
            continue
        if skip:
            src.line(d, f"pos += {skip}")
            skip = 0
        _emit_field(src, field, flexible, is_header, False, d)
    if skip:
        src.line(d, f"pos += {skip}")
    src.line(d, "if pos > end: raise _past(pos, end)")
    if flexible:
        src.line(d, "if pos < end and buf[pos] == 0:")  # no tagged fields, the common case
        src.line(d + 1, "pos += 1")
        src.line(d, "else:")
        src.line(d + 1, f"pos = {src.name('tagged', _tagged_fields(tags))}(buf, pos, end)")


def _field_walker(field: Field[object], flexible: bool, is_request_header: bool) -> Walk:
    """A tagged field's value, walked within the bytes its tag announced."""
    src = _Source()
    _emit_field(src, field, flexible, is_request_header, True, 1)
    src.line(1, "if pos > end: raise _past(pos, end)")
    return src.compile()


@cache
def _entity_walker(entity_type: type[Entity]) -> Walk:
    src = _Source()
    _emit_entity(src, entity_type, 1)
    return src.compile()


def walker_source(entity_type: type[Entity]) -> str:
    """The generated source of an entity's walker (for reading and debugging)."""
    return _entity_walker(entity_type).__doc__ or ""


@cache
def request_walker(header_type: type[Entity], body_type: type[Entity]) -> Callable[[bytes | memoryview], None]:
    """A check of a whole request frame (header, then body); raises FrameBoundsError."""
    walk_header = _entity_walker(header_type)
    walk_body = _entity_walker(body_type)

    def check(frame: bytes | memoryview) -> None:
        end = len(frame)
        walk_body(frame, walk_header(frame, 0, end), end)

    return check
