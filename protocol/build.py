"""Build a version-specific kio entity from plain, version-agnostic values.

Handlers describe a response once, as dicts and lists with Kafka's field names (ints for
milliseconds and timestamps); `build(cls, data)` keeps the fields that version has, fills the
defaults of the ones the handler did not give, and converts nested lists to nested entities.
A key that no version of the entity has is a typo and raises UnknownFieldError: left alone it
would answer the field's default (error code 0) without failing any test.
Requests go the other way through `field_or`, for fields older versions lack.

A response may also not miss a field (build(..., missing=...), which ctx.respond passes). The
rule follows how Kafka's own handlers fill their generated *Data classes, which default every
field: an error answer sets its error code and little else (JoinGroupRequest.getErrorResponse and
the group coordinator's `new JoinGroupResponseData().setMemberId(..).setErrorCode(..)` leave the
leader, protocol and members at their defaults), while a success answer sets each field it
carries. So an entity whose error code is given and not NONE, and everything nested in it, may
leave any field at its default; every other entity -- a success, or one with no error code (a
topic or partition list, a broker) -- must give each field to which Kafka's JSON gives no
default, except those whose untouched value is the success's own (error_code: "0 if there was no
error", error_message: "null if there was no error") and throttle_time, which Kafka sets in one
place for every response (sendResponseMaybeThrottle); here only Produce and Fetch have quotas,
and they write their own answers (protocol/fast_responses.py), so every other one is 0. A
whole-request error answer (broker/error_response.py, Kafka's getErrorResponse) passes no check.
Requests are built without one (tools and tests describe only what they send).

Typing: build() takes any entity class of any API and version and reads its fields by reflection;
field values are whatever type each field has, so classes and values are dynamically typed here.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import typing
from collections.abc import Callable, Mapping
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, Final, Literal, ParamSpec, TypeVar, cast

from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from . import newer_schemas

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ("MissingFieldError", "MissingFields", "SchemaField", "UnknownFieldError", "build", "class_cache",
           "field_or", "required_fields", "schema_fields")

_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)

_P = ParamSpec("_P")
_R = TypeVar("_R")
_E = TypeVar("_E", bound="DataclassInstance")


def class_cache(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """functools.cache for functions of a schema class, keeping their signature: typeshed types
    the cache's arguments as Hashable, which mypy says type[Any] is not (every class is)."""
    return cast(Callable[_P, _R], cache(fn))


class UnknownFieldError(TypeError):
    """A response described with a key that no version of its entity has: a misspelt field."""


class MissingFieldError(TypeError):
    """A success answer built without a field Kafka's JSON gives no default: see the module's rule."""


# What build() does with a response entity that misses required fields: raise, or log and let
# the defaults stand (the broker's choice, broker/handler.py).
MissingFields = Callable[["type[DataclassInstance]", frozenset[str]], None]

# Fields with no default in Kafka's JSON that a success may still leave out: see the module's rule.
_IMPLIED: Final = frozenset({"error_message", "throttle_time"})


def field_or(entity: Any, name: str, default: Any) -> Any:
    return getattr(entity, name, default)


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaField:
    """One field of a kio entity, as the wire sees it."""

    name: str
    kafka_type: str | None
    item: type[DataclassInstance] | None  # the entity type of a struct, or of an array's items
    is_array: bool
    nullable: bool
    tagged: bool


@class_cache
def schema_fields(cls: type[DataclassInstance]) -> tuple[SchemaField, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint)
        inner = next((a for a in (hint, *args) if typing.get_origin(a) is tuple), None)
        if inner is not None:
            item = typing.get_args(inner)[0]
        else:  # a single struct (KIP-893), nullable or not
            item = next((a for a in (hint, *args) if dataclasses.is_dataclass(a)), None)
        entity = item if isinstance(item, type) and dataclasses.is_dataclass(item) else None
        out.append(SchemaField(f.name, f.metadata.get("kafka_type"), entity, inner is not None,
                               type(None) in args, f.metadata.get("tag") is not None))
    return tuple(out)


@class_cache
def _plan(cls: type[DataclassInstance]) -> tuple[tuple[str, str | None, Any, object, bool], ...]:
    """(name, kafka_type, nested entity type or None, default, nullable) per field."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        nullable = type(None) in typing.get_args(hint)
        nested = None
        for arg in (hint, *typing.get_args(hint)):
            if typing.get_origin(arg) is tuple:
                elem = typing.get_args(arg)[0]
                if dataclasses.is_dataclass(elem):
                    nested = elem
            elif dataclasses.is_dataclass(arg):  # a single, nullable entity (Cursor | None)
                nested = arg
        if nested is None and dataclasses.is_dataclass(hint):
            nested = hint
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = _zero(f.metadata.get("kafka_type"), nested, nullable)
        out.append((f.name, f.metadata.get("kafka_type"), nested, default, nullable))
    return tuple(out)


def _zero(kafka_type: str | None, nested: Any, nullable: bool) -> Any:
    if nullable:
        return None
    match kafka_type:
        case "error_code":
            return ErrorCode.none
        case "string":
            return ""
        case "bytes" | "records":
            return b""
        case "bool":
            return False
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(0)
        case "datetime_i64":
            return _EPOCH
        case "uuid":
            return None
        case None:
            return () if nested is not None else None
    return 0


def _convert(kafka_type: str | None, nested: Any, value: Any, missing: MissingFields | None) -> Any:
    if value is None:
        return None
    if nested is not None:
        if isinstance(value, Mapping):
            return build(nested, value, missing)
        return tuple(v if dataclasses.is_dataclass(v) else build(nested, v, missing) for v in value)
    if isinstance(value, list):
        return tuple(value)
    match kafka_type:
        case "timedelta_i32" | "timedelta_i64" if isinstance(value, int):
            return datetime.timedelta(milliseconds=value)
        case "datetime_i64" if isinstance(value, int):
            return None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)
        case "error_code" if not isinstance(value, ErrorCode):
            return ErrorCode(value)
    return value


def _family(cls: type[Any]) -> tuple[int, str, str]:
    """(api key, request or response, the entity's name without protocol/newer_schemas's V<N>)."""
    direction = "request" if "request_header" in cls.__header_schema__.__module__ else "response"
    return int(cls.__api_key__), direction, re.sub(r"V\d+$", "", cls.__name__)


@cache
def _family_fields(api_key: int, direction: str) -> dict[str, frozenset[str]]:
    """Entity name -> its field names in any version, kio's and protocol/newer_schemas's."""
    kind: Literal[EntityType.request, EntityType.response] = (
        EntityType.request if direction == "request" else EntityType.response)
    versions = schema_name_map[api_key_map[api_key]]
    modules = [import_module(paths[kind].partition(":")[0]) for paths in versions.values() if kind in paths]
    entities = [value for module in (*modules, newer_schemas) for value in vars(module).values()
                if isinstance(value, type) and dataclasses.is_dataclass(value) and hasattr(value, "__api_key__")]
    names: dict[str, set[str]] = {}
    for entity in entities:
        api, entity_direction, name = _family(entity)
        if (api, entity_direction) == (api_key, direction):
            names.setdefault(name, set()).update(f.name for f in dataclasses.fields(entity))
    return {name: frozenset(fields) for name, fields in names.items()}


@class_cache  # asked on every build of every entity: its name's regex was most of the check's cost
def known_fields(cls: type[DataclassInstance]) -> frozenset[str]:
    """The field names of `cls` in any version of its API: a handler describes a response once,
    and build() drops what the negotiated version lacks, so only a name in no version is wrong."""
    if not hasattr(cls, "__api_key__"):  # a plain dataclass, not a message schema
        return frozenset(f.name for f in dataclasses.fields(cls))
    api_key, direction, name = _family(cls)
    return _family_fields(api_key, direction)[name]


def _refuse_unknown(cls: type[DataclassInstance], data: Mapping[str, object]) -> None:
    known = known_fields(cls)
    if not known.issuperset(data):
        unknown = sorted(set(data) - known)
        raise UnknownFieldError(f"{cls.__name__} has no field {', '.join(map(repr, unknown))} in any version; "
                                f"its fields are {', '.join(sorted(known))}")


@class_cache
def required_fields(cls: type[DataclassInstance]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(the fields a success must give, the error code fields that tell an error answer)."""
    fields = dataclasses.fields(cls)
    errors = tuple(f.name for f in fields if f.metadata.get("kafka_type") == "error_code")
    required = frozenset(f.name for f in fields if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING and f.name not in _IMPLIED
                         and f.name not in errors)
    return required, errors


def _check(cls: type[DataclassInstance], data: Mapping[str, object], missing: MissingFields) -> bool:
    """Whether the entity's children are checked too: not inside an error answer."""
    required, errors = required_fields(cls)
    for name in errors:
        if data.get(name):  # an error answer: Kafka leaves the rest at defaults
            return False
    if not data.keys() >= required:
        missing(cls, required.difference(data))
    return True


def build(cls: type[_E], data: Mapping[str, object], missing: MissingFields | None = None) -> _E:
    """`missing`: called with the fields a success answer left out (see the module's rule)."""
    _refuse_unknown(cls, data)
    if missing is not None and not _check(cls, data, missing):
        missing = None
    kwargs = {}
    for name, kafka_type, nested, default, _nullable in _plan(cls):
        if name in data:
            kwargs[name] = _convert(kafka_type, nested, data[name], missing)
        else:
            kwargs[name] = default
    return cls(**kwargs)
