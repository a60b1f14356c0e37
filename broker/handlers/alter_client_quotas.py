"""AlterClientQuotas v0-1.

Behaviour: Kafka's controller checks, entity by entity (ClientQuotaControlManager): entity types
(user, client-id, both, or ip), names (None is the default entity, "" is refused), keys and their
values (positive; whole numbers for the byte rates). Each entry is answered on its own; an entry
that fails changes nothing, the others apply. eosbroker enforces producer_byte_rate and
consumer_byte_rate (broker/quotas) and refuses the other keys, rather than store a quota it would
not enforce. validate_only checks and changes nothing. The quotas are kept with the dynamic broker
configs (the data dir, or PostgreSQL in cluster mode) and apply from the next request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from ..quotas.entities import check_entity, check_value, invalid


def _compute(keys: Mapping[str, str], ops: Any) -> Any:
    changes: dict[str, float | None] = {}
    for op in ops:
        if op.key in changes:
            raise invalid(f"Duplicate quota key {op.key} not updating quota for this entity")
        changes[op.key] = None if op.remove else op.value
    for key, value in changes.items():
        if value is not None:
            check_value(keys, key, value)

    def compute(before: Mapping[str, float]) -> Mapping[str, float]:
        after = dict(before)
        for key, value in changes.items():
            if value is None:
                after.pop(key, None)
            else:
                after[key] = value
        return after

    return compute


async def _alter_one(ctx: RequestContext, entry: Any, validate_only: bool) -> dict[str, Any]:
    pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
    result: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None,
                              "entity": [{"entity_type": t, "entity_name": n} for t, n in pairs]}
    try:
        entity, keys = check_entity(pairs)
        compute = _compute(keys, entry.ops)
        quotas = ctx.broker.quotas
        if quotas is None:
            raise KafkaError(ErrorCode.unknown_server_error, "client quotas are not open on this broker")
        await quotas.alter(entity, compute, validate_only)
    except KafkaError as exc:
        result["error_code"], result["error_message"] = exc.code, exc.message
    return result


async def handle(ctx: RequestContext, request: Any) -> Any:
    require_cluster(ctx, AclOperation.ALTER_CONFIGS)
    entries = [await _alter_one(ctx, entry, request.validate_only) for entry in request.entries]
    return ctx.respond({"throttle_time": 0, "entries": entries})


HANDLER = Handler(api_key=ApiKey.ALTER_CLIENT_QUOTAS, min_version=0, max_version=1, handle=handle)
