"""The one table from API key to handler, and the one place a request meets its handler.

ApiVersions answers from the table, so the advertised versions are exactly the implemented ones.
Add an API by adding its module's name to HANDLER_MODULES. Here, once for every API: a null where
the schema forbids one closes the connection (Kafka's parser rejects it; the Produce and Fetch
readers, protocol/produce_request.py and fetch_request.py, find their own), a KafkaError
escaping a handler answers the whole request with that error, and anything unexpected answers
UNKNOWN_SERVER_ERROR with one logged traceback; the connection and the broker carry on.

Typing: the request is the entity of whichever API the frame names (an `object` here); each
handler annotates its own (protocol/request_types), and the one table (broker/handler.py Handler)
holds them all, so it hands the request on untyped.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from protocol.api_keys import ApiKey
from protocol.codec import RequestHeader, encode_response
from protocol.errors import ErrorCode, KafkaError
from protocol.fast_responses import Buffers
from protocol.fetch_request import FetchRequest
from protocol.produce_request import ProduceRequest

from .error_response import error_response, null_in_non_nullable
from .handler import NO_RESPONSE, CloseConnection, Handler, Later, RequestContext

__all__ = ("HANDLERS", "HANDLER_MODULES", "describe", "dispatch", "supported")

log = logging.getLogger(__name__)

# Modules of broker/handlers that export HANDLER, one per Kafka API.
HANDLER_MODULES: Final = (
    "add_offsets_to_txn", "add_partitions_to_txn", "add_raft_voter", "alter_client_quotas", "alter_configs",
    "alter_partition_reassignments", "alter_replica_log_dirs", "alter_user_scram_credentials", "api_versions",
    "consumer_group_describe", "consumer_group_heartbeat", "create_acls", "create_delegation_token",
    "create_partitions", "create_topics", "delete_acls", "delete_groups", "delete_records", "delete_topics",
    "describe_acls", "describe_client_quotas", "describe_cluster", "describe_configs", "describe_delegation_token",
    "describe_groups", "describe_log_dirs", "describe_producers", "describe_quorum", "describe_topic_partitions",
    "describe_transactions", "describe_user_scram_credentials", "elect_leaders", "end_txn", "expire_delegation_token",
    "fetch", "find_coordinator", "heartbeat", "incremental_alter_configs", "init_producer_id", "join_group",
    "leave_group", "list_config_resources", "list_groups", "list_offsets", "list_partition_reassignments",
    "list_transactions", "metadata", "offset_commit", "offset_delete", "offset_fetch", "offset_for_leader_epoch",
    "produce", "remove_raft_voter", "renew_delegation_token", "sasl_authenticate", "sasl_handshake",
    "share_acknowledge", "share_fetch", "share_group_describe", "share_group_heartbeat", "sync_group",
    "txn_offset_commit", "describe_share_group_offsets", "alter_share_group_offsets", "delete_share_group_offsets",
    "unregister_broker", "update_features", "write_txn_markers", "read_share_group_state", "write_share_group_state",
    "initialize_share_group_state", "read_share_group_state_summary", "delete_share_group_state",
)


def _table(names: tuple[str, ...]) -> Mapping[ApiKey, Handler]:
    table: dict[ApiKey, Handler] = {}
    for name in names:
        handler: Handler = importlib.import_module(f"{__package__}.handlers.{name}").HANDLER
        if handler.api_key in table:
            raise RuntimeError(f"two handlers for {handler.api_key.name}")
        table[handler.api_key] = handler
    return MappingProxyType(table)


HANDLERS: Mapping[ApiKey, Handler] = _table(HANDLER_MODULES)
_READ_BY_HAND: Final = frozenset({ProduceRequest, FetchRequest})


def supported(api_key: int, version: int) -> bool:
    handler = HANDLERS.get(api_key)  # type: ignore[call-overload]
    return handler is not None and handler.parses(version)


async def dispatch(ctx: RequestContext, request: object) -> bytes | Buffers | Later | None:
    """The encoded response to `request`, None when none is due (acks=0 Produce), or a Later
    (broker/handler.py) when it comes once the request's ordered part is done.

    Raises KafkaError when the connection must close: the request is malformed, or it has no
    response to carry its error (acks=0)."""
    # Produce and Fetch requests, read by hand, had their nulls checked by their readers.
    if type(request) not in _READ_BY_HAND and (path := null_in_non_nullable(request)) is not None:
        raise KafkaError(ErrorCode.invalid_request, f"non-nullable field {path} was serialized as null")
    handler = HANDLERS[ApiKey(ctx.header.api_key)]
    try:
        response = await handler.handle(ctx, request)
        if response is NO_RESPONSE:
            return None
        if isinstance(response, bytes | list | asyncio.Future):  # written by the handler itself
            return response  # (protocol/fast_responses.py), or later
        return encode_response(ctx.header.correlation_id, response)
    except CloseConnection:
        raise
    except KafkaError as exc:
        log.debug("%s from %s failed: %r", describe(ctx.header), ctx.peer, exc)
        return _answer_error(handler, ctx, request, exc.code, exc.message)
    except Exception:
        log.exception("%s from %s failed", describe(ctx.header), ctx.peer)
        return _answer_error(handler, ctx, request, ErrorCode.unknown_server_error, None)


def _answer_error(handler: Handler, ctx: RequestContext, request: object, code: ErrorCode,
                  message: str | None) -> bytes:
    if handler.answer_error is not None:
        return handler.answer_error(ctx, request, code, message)
    header = ctx.header
    return encode_response(header.correlation_id,
                           error_response(header.api_key, header.api_version, request, code, message))


def describe(header: RequestHeader) -> str:
    try:
        name = ApiKey(header.api_key).name
    except ValueError:
        name = f"api key {header.api_key}"
    return f"{name} v{header.api_version} (correlation id {header.correlation_id})"
