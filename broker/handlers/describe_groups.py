"""DescribeGroups v0-5.

Behaviour: state, protocol type, chosen protocol and members of each group; subscriptions and
assignments only once the group is Stable, as Kafka does. An unknown group is described as Dead
with no members and no error (GROUP_ID_NOT_FOUND only exists from v6, not advertised), and so is
a consumer-protocol (KIP-848) group, which ConsumerGroupDescribe describes (from v6 Kafka 4.x says
GROUP_ID_NOT_FOUND, "is not a classic group").
Version notes: v3+ authorized_operations (we send Kafka's "not requested" value); v4+
group_instance_id of each member.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..handler import Handler, RequestContext
from .group_common import group_coordinator

_NO_OPERATIONS = -2147483648


async def handle(ctx: RequestContext, request: Any) -> Any:
    try:
        summaries = await group_coordinator(ctx).describe_groups(list(request.groups))
    except KafkaError as exc:
        groups = [{"error_code": exc.code, "group_id": g, "group_state": "", "protocol_type": "",
                   "protocol_data": "", "members": []} for g in request.groups]
        return ctx.respond({"throttle_time": 0, "groups": groups})
    groups = [
        {
            # Kafka 4.x answers GROUP_ID_NOT_FOUND for a consumer-protocol group from v6 (KIP-1043)
            # and, like an unknown group, Dead without an error below it.
            "error_code": s.error if ctx.version >= 6 else ErrorCode.none,
            "error_message": s.error_message,
            "group_id": s.group_id,
            "group_state": str(s.state),
            "protocol_type": s.protocol_type,
            "protocol_data": s.protocol,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "client_id": m.client_id, "client_host": m.client_host,
                 "member_metadata": m.metadata, "member_assignment": m.assignment}
                for m in s.members
            ],
            "authorized_operations": _NO_OPERATIONS,
        }
        for s in summaries
    ]
    return ctx.respond({"throttle_time": 0, "groups": groups})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_GROUPS, min_version=0, max_version=5, handle=handle)
