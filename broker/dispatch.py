"""The one table from API key to handler. ApiVersions answers from it, so the advertised versions
are exactly the implemented ones. Add an API by adding its module to _MODULES."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from protocol.api_keys import ApiKey
from protocol.codec import RequestHeader
from protocol.errors import ErrorCode, KafkaError

from .handler import Handler, RequestContext
from .handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
)

__all__ = ("HANDLERS", "dispatch", "supported")

log = logging.getLogger(__name__)

_MODULES = (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
)


def _table(modules: tuple[Any, ...]) -> Mapping[ApiKey, Handler]:
    table: dict[ApiKey, Handler] = {}
    for module in modules:
        handler: Handler = module.HANDLER
        if handler.api_key in table:
            raise RuntimeError(f"two handlers for {handler.api_key.name}")
        table[handler.api_key] = handler
    return MappingProxyType(table)


HANDLERS: Mapping[ApiKey, Handler] = _table(_MODULES)


def supported(api_key: int, version: int) -> bool:
    handler = HANDLERS.get(api_key)  # type: ignore[call-overload]
    return handler is not None and handler.parses(version)


class HandlerFailed(Exception):
    """An unexpected error inside a handler; the connection logs it and closes."""


async def dispatch(ctx: RequestContext, request: Any) -> Any:
    handler = HANDLERS[ApiKey(ctx.header.api_key)]
    try:
        return await handler.handle(ctx, request)
    except KafkaError:
        raise
    except Exception as exc:
        log.exception("handler for %s v%d failed on a request from %s",
                      ApiKey(ctx.header.api_key).name, ctx.header.api_version, ctx.peer)
        raise KafkaError(ErrorCode.unknown_server_error, f"{type(exc).__name__}: {exc}") from exc


def describe(header: RequestHeader) -> str:
    try:
        name = ApiKey(header.api_key).name
    except ValueError:
        name = f"api key {header.api_key}"
    return f"{name} v{header.api_version} (correlation id {header.correlation_id})"
