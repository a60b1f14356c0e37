"""LeaveGroup v0-5.

Behaviour: removes members and rebalances the rest; the last member leaving empties the group
(its offsets stay). An empty member id with a group.instance.id removes that static member
(Kafka's administrative removal). Unknown members get UNKNOWN_MEMBER_ID, each on its own.
Version notes: v0-2 name one member and carry its error at the top level; v3+ batch members
(KIP-345) and answer per member.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .group_common import group_coordinator

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.leave_group import LeaveGroupRequest, LeaveGroupRequestV3Plus


def _is_v3_plus(entity: LeaveGroupRequest) -> TypeIs[LeaveGroupRequestV3Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 3


async def handle(ctx: RequestContext, request: LeaveGroupRequest) -> object:
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    if _is_v3_plus(request):
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    try:
        error, member_errors = await group_coordinator(ctx).leave_group(request.group_id, members)
    except KafkaError as exc:
        error, member_errors = exc.code, []
    if ctx.version < 3:
        if error is ErrorCode.none and member_errors:
            error = member_errors[0]
        return ctx.respond({"throttle_time": 0, "error_code": error})
    return ctx.respond({
        "throttle_time": 0,
        "error_code": error,
        "members": [
            {"member_id": mid, "group_instance_id": iid, "error_code": code}
            for (mid, iid), code in zip(members, member_errors, strict=False)
        ],
    })


HANDLER = Handler(api_key=ApiKey.LEAVE_GROUP, min_version=0, max_version=5, handle=handle)
