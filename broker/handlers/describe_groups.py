"""DescribeGroups v0-6.

Behaviour: state, protocol type, chosen protocol and members of each group; subscriptions and
assignments only once the group is Stable, as Kafka does. A group that does not exist, and a
consumer-protocol (KIP-848) group (converted ones with classic members included), are not classic
groups: Kafka's GroupMetadataManager.describeGroups answers them Dead with no members, and from
v6 (KIP-1043) with GROUP_ID_NOT_FOUND and a message ("Group g not found.", "Group g is not a
classic group."); ConsumerGroupDescribe describes a consumer group, and Kafka's admin client
(kafka-consumer-groups --describe) tries that first and falls back to DescribeGroups. Groups the
caller may not DESCRIBE answer GROUP_AUTHORIZATION_FAILED (ACLs, broker/authorizer).
Version notes: v3+ authorized_operations when include_authorized_operations asks for them (else
Kafka's "not requested" value); v4+ group_instance_id of each member; v6 error_message, and the
per-group GROUP_ID_NOT_FOUND above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.group.snapshot import GroupSummary
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import NOT_REQUESTED, authorized_operations, unauthorized
from ..handler import Handler, RequestContext
from .group_common import group_coordinator

if TYPE_CHECKING:
    from protocol.request_types.describe_groups import DescribeGroupsRequest


def _failed(group_id: str, code: ErrorCode) -> dict[str, object]:
    return {"error_code": code, "group_id": group_id, "group_state": "", "protocol_type": "", "protocol_data": "",
            "members": []}


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> object:
    refused = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, request.groups)
    allowed = [g for g in request.groups if g not in refused]
    try:
        described = {s.group_id: _described(ctx, s)
                     for s in await group_coordinator(ctx).describe_groups(allowed)}
    except KafkaError as exc:
        described = {g: _failed(g, exc.code) for g in allowed}
    groups = [_failed(g, ErrorCode.group_authorization_failed) if g in refused else described[g]
              for g in request.groups]
    if getattr(request, "include_authorized_operations", False):
        for group_id, group in zip(request.groups, groups, strict=True):
            if group["error_code"] is ErrorCode.none:
                group["authorized_operations"] = authorized_operations(ctx, ResourceType.GROUP, group_id)
    return ctx.respond({"throttle_time": 0, "groups": groups})


def _not_classic(ctx: RequestContext, group_id: str) -> str | None:
    share = ctx.broker.share_coordinator
    if share is not None and share.describe(group_id) is not None:
        return f"Group {group_id} is not a classic group."
    return None


def _described(ctx: RequestContext, s: GroupSummary) -> dict[str, object]:
    return {
        # Kafka answers GROUP_ID_NOT_FOUND for an unknown or consumer-protocol group from v6
        # (KIP-1043), and Dead without an error below it.
        "error_code": s.error if ctx.version >= 6 else ErrorCode.none,
        "error_message": _not_classic(ctx, s.group_id) or s.error_message,
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
        "authorized_operations": NOT_REQUESTED,
    }


HANDLER = Handler(api_key=ApiKey.DESCRIBE_GROUPS, min_version=0, max_version=6, handle=handle)
