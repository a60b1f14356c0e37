"""The reads the hand-written request readers share (produce_request.py, fetch_request.py): Kafka's
Readable, for whole frames held in bytes or a memoryview.

Every length and count is checked against the bytes that remain before anything is sliced or
looped over, so a lying count allocates nothing; a fixed-size field cut off raises struct.error
or IndexError, which the readers turn into FrameBoundsError with the rest. Positions are passed
and returned rather than kept in an object: a method call or attribute per field would cost
about as much as the field itself, and these run for every Produce and Fetch.

Typing: a tagged field's value is of its reader's type (dynamic in the reader table).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from .errors import ErrorCode, FrameBoundsError, KafkaError

__all__ = (
    "I16", "I32", "UUID_SIZE", "NullFieldError", "Overrun", "ValueReader", "bad_count", "check_null", "compact_count",
    "compact_string", "int32_count", "overrun", "read_tags", "read_uuid", "refused", "skip_tags", "string", "uvarint",
)

I16: Final = struct.Struct(">h")
I32: Final = struct.Struct(">i")
UUID_SIZE: Final = 16
_NO_TOPIC_ID: Final = bytes(UUID_SIZE)
Frame = bytes | memoryview


class NullFieldError(KafkaError):
    """A null where the schema forbids one: Kafka's parser refuses the request, and so the
    connection closes (as broker/dispatch.py does for the requests kio reads)."""

    def __init__(self, path: str) -> None:
        super().__init__(ErrorCode.invalid_request, f"non-nullable field {path} was serialized as null")


class Overrun(Exception):
    """A length or count reaching past the frame (raised as FrameBoundsError with the version)."""


def _malformed(api_key: int, version: int, exc: Exception) -> str:
    return f"malformed api key {api_key} v{version} request: {exc}"


def refused(api_key: int, version: int, exc: Exception) -> KafkaError:
    """What a reader's failure becomes: a string that is not UTF-8 is INVALID_REQUEST; a length,
    count or fixed-size field reaching past the frame (Overrun, struct.error, IndexError) is
    FrameBoundsError, INVALID_REQUEST too."""
    if isinstance(exc, UnicodeDecodeError):
        return KafkaError(ErrorCode.invalid_request, _malformed(api_key, version, exc))
    return FrameBoundsError(_malformed(api_key, version, exc))


def string(buf: Frame, pos: int, end: int) -> tuple[str | None, int]:
    """An INT16-length nullable string (non-flexible versions, and every header's client_id)."""
    (size,) = I16.unpack_from(buf, pos)
    pos += 2
    if size < 0:
        check_null(size, pos - 2)
        return None, pos
    if (after := pos + size) > end:
        raise overrun(pos, size, end)
    return str(buf[pos:after], "utf-8"), after


def compact_string(buf: Frame, pos: int, end: int) -> tuple[str | None, int]:
    size = buf[pos]  # the uvarint's one-byte case inline (up to 126 bytes), as for the counts
    if size < 0x80:
        pos += 1
    else:
        size, pos = uvarint(buf, pos)
    if size == 0:
        return None, pos
    if (after := pos + size - 1) > end:
        raise overrun(pos, size - 1, end)
    return str(buf[pos:after], "utf-8"), after


def int32_count(buf: Frame, pos: int, end: int, least: int, path: str) -> tuple[int, int]:
    """A non-flexible array's INT32 count and the position after it, refused (bad_count) when
    null or when the bytes left cannot hold that many items of at least `least` bytes."""
    (count,) = I32.unpack_from(buf, pos)
    pos += 4
    if count < 0 or count * least > end - pos:
        raise bad_count(pos, count, least, end, path)
    return count, pos


def compact_count(buf: Frame, pos: int, end: int, least: int, path: str) -> tuple[int, int]:
    """A flexible array's count (an unsigned varint of count + 1, 0 for null), checked as
    int32_count checks it."""
    count = buf[pos]  # the uvarint's one-byte case inline: up to 126 items
    if count < 0x80:
        pos += 1
    else:
        count, pos = uvarint(buf, pos)
    if count == 0 or (count - 1) * least > end - pos:
        raise bad_count(pos, count - 1, least, end, path)
    return count - 1, pos


def uvarint(buf: Frame, pos: int) -> tuple[int, int]:
    """Kafka's readUnsignedVarint: at most 5 bytes. The one-byte case is most lengths and counts."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift, start = byte & 0x7F, 7, pos
    while True:
        pos += 1
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7
        if shift > 28:
            raise Overrun(f"varint at byte {start} is longer than 5 bytes")


# A known tagged field's value, read from a position up to the end of the bytes its tag announced:
# (value, position after it).
ValueReader = Callable[[Frame, int, int], tuple[Any, int]]
_NONE_KNOWN: Final[Mapping[int, ValueReader]] = {}


def read_tags(buf: Frame, pos: int, end: int, known: Mapping[int, ValueReader]) -> tuple[dict[int, Any], int]:
    """A tag buffer (a count, then each field's tag, size and bytes): the values of the `known`
    tags, and the position after it. Unknown tags are skipped, as Kafka skips them. A known value
    must fit in its size and, as Kafka's generated readers and kio do, reading goes on where the
    value ended."""
    count, pos = uvarint(buf, pos)
    if count * 2 > end - pos:
        raise bad_count(pos, count, 2, end, "tagged fields")
    values = {}
    for _ in range(count):
        tag, pos = uvarint(buf, pos)
        size, pos = uvarint(buf, pos)
        if (stop := pos + size) > end:
            raise overrun(pos, size, end)
        read = known.get(tag)
        if read is None:
            pos = stop
            continue
        values[tag], pos = read(buf, pos, stop)
        if pos > stop:
            raise Overrun(f"tagged field {tag} ends at byte {pos}, past its size's end at {stop}")
    return values, pos


def skip_tags(buf: Frame, pos: int, end: int) -> int:
    """Past a tag buffer none of whose tags the reader knows."""
    return read_tags(buf, pos, end, _NONE_KNOWN)[1]


def read_uuid(buf: Frame, pos: int, end: int) -> tuple[uuid.UUID | None, int]:
    """A UUID (a TopicId, or a follower's directory id); the zero UUID reads as None, as kio reads it."""
    raw = bytes(buf[pos : pos + UUID_SIZE])
    if len(raw) < UUID_SIZE:
        raise overrun(pos, UUID_SIZE, end)
    if raw == _NO_TOPIC_ID:
        return None, pos + UUID_SIZE
    known = _RECENT_IDS.get(raw)
    if known is None:
        if len(_RECENT_IDS) >= _RECENT_IDS_KEPT:
            _RECENT_IDS.clear()
        known = _RECENT_IDS[raw] = uuid.UUID(bytes=raw)
    return known, pos + UUID_SIZE


# The UUIDs of the ids clients sent lately: a producer or consumer names the same few topics in
# every request, and uuid.UUID(bytes=) costs more than reading the rest of a one-partition request.
_RECENT_IDS: dict[bytes, uuid.UUID] = {}
_RECENT_IDS_KEPT: Final = 4096


def check_null(size: int, pos: int) -> None:
    """A negative length is null if it is -1, else malformed."""
    if size != -1:
        raise Overrun(f"negative length {size} at byte {pos}")


def overrun(pos: int, size: int, end: int) -> Overrun:
    return Overrun(f"{size} bytes at byte {pos} reach past the frame; {max(end - pos, 0)} remain")


def bad_count(pos: int, count: int, least: int, end: int, path: str) -> KafkaError | Overrun:
    """Why an array's count is refused before any item is read: null (-1) where `path` may not
    be, or more items of at least `least` bytes than the bytes left could hold."""
    if count == -1:
        return NullFieldError(path)
    if count < 0:
        return Overrun(f"negative count {count} at byte {pos}")
    return Overrun(f"array at byte {pos} claims {count} items of at least {least} bytes; {end - pos} remain")
