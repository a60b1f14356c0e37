"""AlterClientQuotas v0-1.

Behaviour: Kafka's controller checks, entity by entity (ClientQuotaControlManager): entity types
(user, client-id, both, or ip), names (None is the default entity, "" is refused), keys and their
values (positive; whole numbers for the byte rates). Each entry is answered on its own; an entry
that fails changes nothing, the others apply, all in one write. More than 10000 changes in one
request are refused whole (POLICY_VIOLATION), as Kafka's controller refuses them; a second entry
for one entity is refused. eosbroker enforces producer_byte_rate and
consumer_byte_rate (broker/quotas) and refuses the other keys, rather than store a quota it would
not enforce. validate_only checks and changes nothing. The quotas are kept with the dynamic broker
configs (the data dir, or PostgreSQL in cluster mode) and apply from the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from ..quotas.entities import Entity, check_entity, check_value, invalid
from .create_topics import check_batch_size

if TYPE_CHECKING:
    from protocol.request_types.alter_client_quotas import AlterClientQuotasRequest, EntryData, OpData

Compute = Callable[[Mapping[str, float]], Mapping[str, float]]


def _compute(keys: Mapping[str, str], ops: Sequence[OpData]) -> Compute:
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


def _check(entry: EntryData, seen: set[Entity]) -> tuple[Entity, Compute]:
    entity, keys = check_entity((e.entity_type, e.entity_name) for e in entry.entity)
    if entity in seen:
        raise invalid(f"Ignoring duplicate entity {dict(entity)}")
    seen.add(entity)
    return entity, _compute(keys, entry.ops)


def _answer(entry: EntryData, error: KafkaError | None) -> dict[str, object]:
    return {"error_code": ErrorCode.none if error is None else error.code,
            "error_message": None if error is None else error.message,
            "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}


async def handle(ctx: RequestContext, request: AlterClientQuotasRequest) -> object:
    require_cluster(ctx, AclOperation.ALTER_CONFIGS)
    entries: Sequence[EntryData] = request.entries  # one type over the versions' tuples
    errors: list[KafkaError | None] = [None] * len(entries)
    changes: dict[Entity, Compute] = {}
    try:
        check_batch_size(sum(len(entry.ops) for entry in entries))
        seen: set[Entity] = set()
        for i, entry in enumerate(entries):
            try:
                entity, compute = _check(entry, seen)
            except KafkaError as exc:
                errors[i] = exc
            else:
                changes[entity] = compute
        if ctx.broker.quotas is None:
            raise KafkaError(ErrorCode.unknown_server_error, "client quotas are not open on this broker")
        await ctx.broker.quotas.alter(changes, request.validate_only)
    except KafkaError as exc:  # the whole request: every entry not already refused
        errors = [e or exc for e in errors]
    return ctx.respond({"throttle_time": 0,
                        "entries": [_answer(e, err) for e, err in zip(entries, errors, strict=True)]})


HANDLER = Handler(api_key=ApiKey.ALTER_CLIENT_QUOTAS, min_version=0, max_version=1, handle=handle)
