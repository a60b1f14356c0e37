"""A whole response that answers one request with one error, for any API and version.

Kafka's AbstractRequest.getErrorResponse: the response's top-level error_code (where it has one)
and every topic/partition/resource item, mirroring the request's arrays, carry the error, so a
client can match each of its items to an answer. This is built once from the kio schemas: a
response array is paired with the request array of the same name (or the one array the request
has at that level, or a known Kafka rename), and each item copies its keys (names, indexes, ids)
from the request item. Arrays that carry no error (configs, members) stay empty.

Typing: it mirrors any request entity into the response entity of any API and version by
reflection over their fields, so the request entities are dynamically typed here; what it builds
is kio's ResponsePayload.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Final

from protocol.api_keys import ApiKey
from protocol.build import SchemaField, build, class_cache, schema_fields
from protocol.codec import response_schema
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from kio.static.protocol import ResponsePayload

__all__ = ("error_response", "null_in_non_nullable")

# Response field -> request fields it mirrors, where Kafka's JSON names them differently.
_ALIASES: Final = {
    "responses": ("topic_data", "topics", "resources"),
    "partition_responses": ("partition_data",),
    "results": ("resources", "creations", "groups_names", "users", "feature_updates"),
    "results_by_transaction": ("transactions",),
    "results_by_topic_v3_and_below": ("v3_and_below_topics",),
    "results_by_partition": ("partitions",),
    "topic_results": ("topics",),
    "filter_results": ("filters",),
    "transaction_states": ("transactional_ids",),
    "coordinators": ("coordinator_keys",),
    "partition_index": ("partition", "index"),
    "index": ("partition_index", "partition"),
    "name": ("topic", "topic_name"),
    "topic": ("name",),
    "key": ("coordinator_key",),
    "user": ("name",),
}


# Offsets, timestamps and epochs an error item leaves unknown: Kafka answers -1 there
# (ProduceResponse.PartitionResponse(error), FetchResponse INVALID_HIGH_WATERMARK, ListOffsets
# UNKNOWN_OFFSET/UNKNOWN_TIMESTAMP), never 0, which a client could take for a real offset.
_UNKNOWN: Final = frozenset({
    "base_offset", "log_append_time", "log_start_offset", "high_watermark", "last_stable_offset",
    "offset", "timestamp", "leader_epoch",
})


@class_cache
def _carries_error(cls: type[DataclassInstance]) -> bool:
    return any(f.kafka_type == "error_code" or (f.item is not None and _carries_error(f.item))
               for f in schema_fields(cls))


def _source(request_cls: type[DataclassInstance], name: str, want_array: bool) -> SchemaField | None:
    """The request field a response field mirrors: same name, else one of Kafka's renames."""
    by_name = {f.name: f for f in schema_fields(request_cls)}
    for candidate in (name, *_ALIASES.get(name, ())):
        found = by_name.get(candidate)
        if found is not None and found.is_array == want_array:
            return found
    return None


def _source_array(request_cls: type[DataclassInstance], response: SchemaField) -> SchemaField | None:
    """The request array a response array mirrors: the same name, else a Kafka rename, else the
    request's one array when their items share a key (DescribeLogDirs' results are log dirs,
    not the topics its request names)."""
    arrays = {f.name: f for f in schema_fields(request_cls) if f.is_array}
    if response.name in arrays:
        return arrays[response.name]
    renamed = next((arrays[a] for a in _ALIASES.get(response.name, ()) if a in arrays), None)
    if renamed is not None:
        return renamed
    only = list(arrays.values())
    return only[0] if len(only) == 1 and _shares_key(only[0], response) else None


def _shares_key(request: SchemaField, response: SchemaField) -> bool:
    if request.item is None or response.item is None:  # names or indexes: they are the keys
        return True
    return any(_source(request.item, f.name, want_array=False) is not None
               for f in schema_fields(response.item) if not f.is_array)


def _key_field(cls: type[DataclassInstance], kafka_type: str | None) -> str | None:
    """Where a scalar request item (a topic name, a partition index) goes in a response item."""
    return next((f.name for f in schema_fields(cls)
                 if f.kafka_type == kafka_type and not f.is_array and f.name != "error_message"), None)


def _item(cls: type[DataclassInstance], source: Any, source_type: str | None, code: ErrorCode,
          message: str | None) -> dict[str, object]:
    if dataclasses.is_dataclass(source):
        return _mirror(cls, source, code, message, keys=True)
    data = _mirror(cls, None, code, message, keys=False)
    key = _key_field(cls, source_type)
    if key is not None:
        data[key] = source
    return data


def _mirror(cls: type[DataclassInstance], source: Any, code: ErrorCode, message: str | None, *,
            keys: bool) -> dict[str, object]:
    """`keys`: copy the item's scalar keys; never at the top, where a copied session id or member
    id would tell the client something the broker did not grant."""
    data: dict[str, object] = {}
    for f in schema_fields(cls):
        if f.kafka_type == "error_code":
            data[f.name] = code
        elif f.name == "error_message":
            data[f.name] = message
        elif source is None:
            continue
        elif keys and f.item is not None and not f.is_array and not f.nullable:
            # a struct the answer must carry (ShareFetch's CurrentLeader): every int unknown, -1
            data[f.name] = {g.name: -1 for g in schema_fields(f.item) if g.kafka_type in ("int32", "int64")}
        elif keys and f.name in _UNKNOWN and f.item is None and not f.is_array:
            data[f.name] = -1
        elif f.is_array and f.item is not None and _carries_error(f.item):
            src = _source_array(type(source), f)
            items = getattr(source, src.name) if src is not None else None
            data[f.name] = [_item(f.item, i, src.kafka_type, code, message)  # type: ignore[union-attr]
                            for i in items or ()]
        elif keys and f.item is None and not f.is_array:
            src = _source(type(source), f.name, want_array=False)
            value = getattr(source, src.name) if src is not None else None
            if src is not None and src.kafka_type == f.kafka_type and (value is not None or f.nullable):
                data[f.name] = value
    return data


def error_response(api_key: int, version: int, request: Any, code: ErrorCode,
                   message: str | None) -> ResponsePayload:
    """The response entity answering every item of `request` with `code` (and `message` where the
    version carries error_message)."""
    schema = response_schema(api_key, version)
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        # One results array answers two request arrays (Kafka's getErrorResponse: each user once).
        users = dict.fromkeys(item.name for item in (*request.deletions, *request.upsertions))
        return build(schema, {"results": [{"user": u, "error_code": code, "error_message": message} for u in users]})
    if api_key == ApiKey.ALTER_REPLICA_LOG_DIRS:
        # Each directory's topics answered in turn, partitions by index (Kafka's getErrorResponse).
        return build(schema, {"throttle_time": 0, "results": [
            {"topic_name": t.name, "partitions": [{"partition_index": p, "error_code": code} for p in t.partitions]}
            for d in request.dirs for t in d.topics]})
    return build(schema, _mirror(schema, request, code, message, keys=False))


def null_in_non_nullable(entity: Any, prefix: str = "") -> str | None:
    """The path of a null in a field the schema does not let be null, if any.

    kio's reader accepts such nulls; Kafka's generated parsers reject the request ("non-nullable
    field ... was serialized as null"), so the handlers may rely on the schema."""
    for name, may_not_be_null, is_array, nested in _null_plan(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if may_not_be_null:
                return prefix + name
        elif nested:
            for item in value if is_array else (value,):
                if (path := null_in_non_nullable(item, f"{prefix}{name}.")) is not None:
                    return path
    return None


@class_cache
def _null_plan(cls: type[DataclassInstance]) -> tuple[tuple[str, bool, bool, bool], ...]:
    """The fields of cls that can hold a forbidden null, or lead to ones that can: (name, whether
    a null there is forbidden, is_array, whether to look inside). Integers, booleans and UUIDs
    cannot come off the wire as null, and a struct whose fields all cannot is not looked into,
    so a request is walked only where a null could hide (every request but Produce is checked)."""
    plan = []
    for f in schema_fields(cls):
        forbidden = not f.nullable and (f.is_array or f.item is not None or f.kafka_type in _NULLABLE_KINDS)
        nested = f.item is not None and bool(_null_plan(f.item))
        if forbidden or nested:
            plan.append((f.name, forbidden, f.is_array, nested))
    return tuple(plan)


# Wire types with a null encoding; a null elsewhere cannot come off the wire.
_NULLABLE_KINDS: Final = frozenset({"string", "bytes", "records"})
