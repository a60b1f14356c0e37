"""JoinGroup v0-9.

Behaviour: the classic protocol's join (coordinator/group/metadata.py): the answer waits until
every known member has rejoined or the rebalance timeout passes; the leader gets every member's
subscription and the protocol chosen by vote. Group ids must be non-empty (INVALID_GROUP_ID).
Version notes: v0 has no rebalance timeout (the session timeout is used, as Kafka does); v4+ first
joins with an empty member id get MEMBER_ID_REQUIRED and an id to rejoin with; v5+ static
membership (group.instance.id); v7+ answers protocol_type; v9 skip_assignment (KIP-814).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.group.member import JoinParams
from protocol.api_keys import ApiKey
from protocol.errors import KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .group_common import client_host, group_coordinator, ms

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.join_group import JoinGroupRequest, JoinGroupRequestV1Plus


def _is_v1_plus(entity: JoinGroupRequest) -> TypeIs[JoinGroupRequestV1Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 1


def _params(ctx: RequestContext, request: JoinGroupRequest) -> JoinParams:
    session = ms(request.session_timeout)
    return JoinParams(
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        rebalance_timeout_ms=ms(request.rebalance_timeout) if _is_v1_plus(request) else session,
        session_timeout_ms=session,
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, p.metadata) for p in request.protocols),
        require_known_member_id=ctx.version >= 4,
        supports_skip_assignment=ctx.version >= 9,
        reason=getattr(request, "reason", None),
    )


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> object:
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    try:
        result = await group_coordinator(ctx).join_group(request.group_id, _params(ctx, request))
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "generation_id": -1,
                            "protocol_name": None if ctx.version >= 7 else "", "leader": "",
                            "member_id": request.member_id, "members": []})
    protocol_name = result.protocol_name
    if protocol_name is None and ctx.version < 7:
        protocol_name = ""  # nullable only from v7
    return ctx.respond({
        "throttle_time": 0,
        "error_code": result.error,
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": protocol_name,
        "leader": result.leader_id,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
            for m in result.members
        ],
    })


HANDLER = Handler(api_key=ApiKey.JOIN_GROUP, min_version=0, max_version=9, handle=handle)
