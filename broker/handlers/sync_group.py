"""SyncGroup v0-5.

Behaviour: followers wait for the leader's SyncGroup; the leader's assignment is written to
__consumer_offsets before anyone is answered, and a member missing from it gets an empty
assignment. REBALANCE_IN_PROGRESS while the group prepares a rebalance, ILLEGAL_GENERATION for a
stale generation, UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID for members the group does not know.
Version notes: v3+ group_instance_id; v5 carries protocol type and name, checked against the
group's (INCONSISTENT_GROUP_PROTOCOL) and echoed back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.group.member import SyncParams
from protocol.api_keys import ApiKey
from protocol.errors import KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .group_common import group_coordinator, member_identity

if TYPE_CHECKING:
    from protocol.request_types.sync_group import SyncGroupRequest


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> object:
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    try:
        result = await group_coordinator(ctx).sync_group(request.group_id, SyncParams(
            **member_identity(request),
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignments={a.member_id: a.assignment for a in request.assignments},
        ))
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "assignment": b""})
    return ctx.respond({
        "throttle_time": 0,
        "error_code": result.error,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "assignment": result.assignment,
    })


HANDLER = Handler(api_key=ApiKey.SYNC_GROUP, min_version=0, max_version=5, handle=handle)
