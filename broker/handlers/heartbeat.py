"""Heartbeat v0-4.

Behaviour: refreshes the member's session timeout. REBALANCE_IN_PROGRESS tells a member to
rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID that it is no longer part of
the group's current generation; INVALID_GROUP_ID for an empty group id.
Version notes: v3+ group_instance_id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .group_common import group_coordinator, member_identity

if TYPE_CHECKING:
    from protocol.request_types.heartbeat import HeartbeatRequest


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> object:
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    try:
        code = await group_coordinator(ctx).heartbeat(request.group_id, **member_identity(request))
    except KafkaError as exc:
        code = exc.code
    return ctx.respond({"throttle_time": 0, "error_code": code})


HANDLER = Handler(api_key=ApiKey.HEARTBEAT, min_version=0, max_version=4, handle=handle)
