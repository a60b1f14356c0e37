"""FindCoordinator v0-6.

Behaviour: this node coordinates every group (key type GROUP = 0) and, once the transaction
coordinator runs, every transactional id (TRANSACTION = 1); other key types are INVALID_REQUEST.
Version notes: v0 has no key type (GROUP); v1-3 answer one key with an error message; v4+ batch
coordinator_keys and answer one entry per key (Java asks for groups and transactions this way).
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext

GROUP, TRANSACTION = 0, 1


def _lookup(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    host, port = ctx.broker.config.advertised_for(ctx.session.listener_name)
    found = {"key": key, "node_id": ctx.broker.node_id, "host": host, "port": port,
             "error_code": ErrorCode.none, "error_message": None}
    missing = {"key": key, "node_id": -1, "host": "", "port": -1}
    if key_type == GROUP:
        service = ctx.broker.group_coordinator
    elif key_type == TRANSACTION:
        service = ctx.broker.txn_coordinator
    else:
        return missing | {"error_code": ErrorCode.invalid_request,
                          "error_message": f"unknown coordinator key type {key_type}"}
    if service is None:
        return missing | {"error_code": ErrorCode.coordinator_not_available,
                          "error_message": "the coordinator is not running"}
    return found


async def handle(ctx: RequestContext, request: Any) -> Any:
    key_type = int(getattr(request, "key_type", GROUP))
    if ctx.version >= 4:
        entries = [_lookup(ctx, key_type, key) for key in request.coordinator_keys]
        return ctx.respond({"throttle_time": 0, "coordinators": entries})
    entry = _lookup(ctx, key_type, request.key)
    del entry["key"]
    return ctx.respond({"throttle_time": 0, **entry})


HANDLER = Handler(api_key=ApiKey.FIND_COORDINATOR, min_version=0, max_version=6, handle=handle)
