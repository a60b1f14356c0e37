"""ShareGroupDescribe v1 (KIP-932).

Behaviour: each share group's state (Empty, Stable), group epoch, assignment epoch, assignor
("simple") and members, each with its epoch, client, rack, subscription and assignment (topic ids
with their names). An unknown group, or one of another type, is GROUP_ID_NOT_FOUND with Kafka's
message; a group the caller may not DESCRIBE is GROUP_AUTHORIZATION_FAILED.
Version notes: v0 (Kafka 4.0's early access) is not served, as in Kafka 4.1+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.assignor import ASSIGNOR_NAME, Assignment
from coordinator.share.group import ShareGroup, ShareMember
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized_operations, denied, unauthorized
from ..handler import Handler, RequestContext
from .share_common import share_coordinator

if TYPE_CHECKING:
    from protocol.request_types.share_group_describe import ShareGroupDescribeRequest

_NO_OPERATIONS = -2147483648


def _assignment(ctx: RequestContext, assignment: Assignment) -> dict[str, object]:
    parts = []
    for topic_id, partitions in sorted(assignment.items()):
        meta = ctx.broker.logs.topic_by_id(topic_id)
        if meta is not None:
            parts.append({"topic_id": topic_id, "topic_name": meta.name, "partitions": sorted(partitions)})
    return {"topic_partitions": parts}


def _member(ctx: RequestContext, m: ShareMember) -> dict[str, object]:
    return {"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
            "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names), "assignment": _assignment(ctx, m.assignment)}


def _group(ctx: RequestContext, g: ShareGroup, include_operations: bool) -> dict[str, object]:
    return {"error_code": ErrorCode.none, "error_message": None, "group_id": g.group_id, "group_state": g.state,
            "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch, "assignor_name": ASSIGNOR_NAME,
            "members": [_member(ctx, m) for m in g.members.values()],
            "authorized_operations": authorized_operations(ctx, ResourceType.GROUP, g.group_id)
            if include_operations else _NO_OPERATIONS}


def _error(group_id: str, exc: KafkaError) -> dict[str, object]:
    return {"error_code": exc.code, "error_message": exc.message, "group_id": group_id, "group_state": "Dead",
            "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
            "authorized_operations": _NO_OPERATIONS}


async def handle(ctx: RequestContext, request: ShareGroupDescribeRequest) -> object:
    refused = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, request.group_ids)
    groups = []
    for group_id in request.group_ids:
        try:
            if group_id in refused:
                raise denied(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)
            coordinator = share_coordinator(ctx)
            group = coordinator.describe(group_id)
            if group is None:
                other = coordinator.other_group_exists(group_id)
                raise KafkaError(ErrorCode.group_id_not_found,
                                 f"Group {group_id} is not a share group." if other else f"Group {group_id} not found.")
            groups.append(_group(ctx, group, request.include_authorized_operations))
        except KafkaError as exc:
            groups.append(_error(group_id, exc))
    return ctx.respond({"throttle_time": 0, "groups": groups})


HANDLER = Handler(api_key=ApiKey.SHARE_GROUP_DESCRIBE, min_version=1, max_version=1, handle=handle)
