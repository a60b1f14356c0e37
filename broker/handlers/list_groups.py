"""ListGroups v0-5.

Behaviour: every group this node coordinates (all of them), with its protocol type ("" for groups
that only store offsets) and, v4+, its state; v4's states_filter keeps the named states
(case-insensitive, as Kafka does).
Version notes: v5 (KIP-848) adds each group's type; every group here is "classic" (the consumer
protocol is not served), so a types_filter without "classic" (case-insensitive) lists nothing.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..handler import Handler, RequestContext
from .group_common import group_coordinator

# Kafka's GroupType.CLASSIC, as ListGroups v5 names it.
CLASSIC = "classic"


async def handle(ctx: RequestContext, request: Any) -> Any:
    try:
        listed = await group_coordinator(ctx).list_groups(getattr(request, "states_filter", ()))
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "groups": []})
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    if types and CLASSIC not in types:
        listed = []
    groups = [
        {"group_id": group_id, "protocol_type": protocol_type, "group_state": str(state), "group_type": CLASSIC}
        for group_id, protocol_type, state in listed
    ]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "groups": groups})


HANDLER = Handler(api_key=ApiKey.LIST_GROUPS, min_version=0, max_version=5, handle=handle)
