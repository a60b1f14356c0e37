"""Valid requests of every API and version built from kio's entity types, and the invalid
variants the request sweep sends: null in every array/string/bytes field (allowed by the schema or
not), negative and out-of-range values in every integer field. Used by the dispatch unit tests
(error responses mirror these requests) and the e2e sweep against the real broker."""

from __future__ import annotations

import dataclasses
import datetime
import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_writer
from kio.serial._serialize import get_field_writer
from kio.serial.writers import write_int16, write_int32, write_unsigned_varint

from protocol.api_keys import ApiKey
from protocol.build import SchemaField, schema_fields
from protocol.codec import decode_request, request_schema
from protocol.records import Record, build_batch

_INT_RANGES = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
               "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
               "timedelta_i32": (-(1 << 31), (1 << 31) - 1), "timedelta_i64": (-(1 << 63), (1 << 63) - 1)}
# Values that make a request hit state the sweep must not disturb, or wait.
_NAMED = {"acks": -1, "transactional_id": None}
TOPIC = "t"
_GONE = "gone"  # what DeleteTopics/DeleteRecords name, so the sweep keeps its topic


@dataclass(frozen=True, slots=True)
class Variant:
    """One invalid request: `entity` to encode with kio, or `body` bytes kio cannot write."""
    label: str
    entity: Any = None
    body: bytes | None = None


def _scalar(kafka_type: str | None, string: str) -> Any:
    match kafka_type:
        case "string":
            return string
        case "bytes":
            return b""
        case "records":
            return bytes(build_batch([Record(key=None, value=b"v", timestamp=1000)]))
        case "bool":
            return False
        case "uuid":
            return uuid.UUID(int=0)
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(0)
        case "datetime_i64":
            return datetime.datetime.fromtimestamp(0, datetime.UTC)
        case "float64":
            return 0.0
    return 0


def sample(cls: type[Any], string: str = TOPIC) -> Any:
    """A valid entity: one item per array, defaults where the schema has them, else small values."""
    kwargs = {}
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    for f in schema_fields(cls):
        if f.name in _NAMED and (_NAMED[f.name] is not None or f.nullable):
            kwargs[f.name] = _NAMED[f.name]
        elif f.item is not None:
            item = sample(f.item, string)
            kwargs[f.name] = (item,) if f.is_array else (None if f.nullable else item)
        elif f.is_array:
            kwargs[f.name] = (_scalar(f.kafka_type, string),)
        elif defaults[f.name] is not dataclasses.MISSING:
            kwargs[f.name] = defaults[f.name]
        else:
            kwargs[f.name] = _scalar(f.kafka_type, string)
    return cls(**kwargs)


def sample_request(key: ApiKey, version: int) -> Any:
    string = _GONE if key in (ApiKey.DELETE_TOPICS, ApiKey.DELETE_RECORDS) else TOPIC
    return sample(request_schema(key, version), string)


def as_handled(request: Any) -> Any:
    """A kio request as its handler gets it from decode_request: Produce and Fetch requests are
    read by hand into types of their own (protocol/produce_request.py, fetch_request.py), so
    those are written with kio's writer and read back; the others are kio's entities already."""
    if request.__api_key__ not in (ApiKey.PRODUCE, ApiKey.FETCH):
        return request
    buf = io.BytesIO()
    entity_writer(type(request))(buf, request)
    return decode_request(encode_header(request, 1) + buf.getvalue(), lambda *_: True)[1]


# -- variants ------------------------------------------------------------------------------------


def _replace(entity: Any, path: tuple[str, ...], value: Any) -> Any:
    """`entity` with the field at `path` (descending into the first item of arrays) set to value."""
    head, rest = path[0], path[1:]
    if not rest:
        return dataclasses.replace(entity, **{head: value})
    current = getattr(entity, head)
    if isinstance(current, tuple):
        return dataclasses.replace(entity, **{head: (_replace(current[0], rest, value), *current[1:])})
    return dataclasses.replace(entity, **{head: _replace(current, rest, value)})


def _leaves(entity: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], SchemaField]]:
    """(path, field) of every field, descending into first items."""
    for f in schema_fields(type(entity)):
        path = (*prefix, f.name)
        yield path, f
        value = getattr(entity, f.name)
        if f.item is not None and value:
            yield from _leaves(value[0] if f.is_array else value, path)


def _int_values(kafka_type: str) -> list[int]:
    low, high = _INT_RANGES[kafka_type]
    values = [-1, low, high]
    if kafka_type in ("int8", "int16"):
        values += [7, 99]  # unknown enum values
    return values


def variants(request: Any) -> Iterator[Variant]:
    for path, f in _leaves(request):
        kafka_type = f.kafka_type
        label = ".".join(path)
        if f.tagged:
            continue
        if f.is_array or kafka_type in ("string", "bytes", "records"):
            yield Variant(f"{label}=null{'' if f.nullable else ' (not nullable)'}",
                          body=encode_with_null(request, path))
        elif kafka_type in _INT_RANGES:
            for v in _int_values(kafka_type):
                try:
                    value = datetime.timedelta(milliseconds=v) if kafka_type.startswith("timedelta") else v
                except OverflowError:
                    continue  # a timedelta cannot hold +-2^63 ms
                yield Variant(f"{label}={v}", entity=_replace(request, path, value))


# -- encoding a null kio will not write ------------------------------------------------------------


def _write_null(buf: io.BytesIO, kafka_type: str | None, is_array: bool, flexible: bool) -> None:
    if flexible:
        write_unsigned_varint(buf, 0)
    elif is_array or kafka_type in ("bytes", "records"):
        write_int32(buf, -1)
    else:
        write_int16(buf, -1)


def _write(buf: io.BytesIO, entity: Any, path: tuple[str, ...]) -> None:
    cls = type(entity)
    flexible = cls.__flexible__
    for field, f in zip(dataclasses.fields(cls), schema_fields(cls), strict=True):
        if f.tagged:
            continue
        value = getattr(entity, f.name)
        if not path or path[0] != f.name:
            get_field_writer(field, flexible=flexible, is_request_header=False, is_tag=False)(buf, value)
        elif len(path) == 1:
            _write_null(buf, f.kafka_type, f.is_array, flexible)
        elif f.is_array:
            (write_unsigned_varint(buf, len(value) + 1) if flexible else write_int32(buf, len(value)))
            _write(buf, value[0], path[1:])
            for item in value[1:]:
                entity_writer(type(item))(buf, item)
        else:
            if f.nullable:
                buf.write(b"\x01")  # a present nullable struct (KIP-893)
            _write(buf, value, path[1:])
    if flexible:
        write_unsigned_varint(buf, 0)  # no tagged fields


def encode_with_null(request: Any, path: tuple[str, ...]) -> bytes:
    """The request body (no header) with a null at `path`, whatever the schema allows."""
    buf = io.BytesIO()
    _write(buf, request, path)
    return buf.getvalue()


def encode_header(request: Any, correlation_id: int) -> bytes:
    header_type = request.__header_schema__
    header = header_type(request_api_key=request.__api_key__, request_api_version=request.__version__,
                         correlation_id=correlation_id, client_id="sweep")
    buf = io.BytesIO()
    entity_writer(header_type)(buf, header)
    return buf.getvalue()
