"""ConsumerGroupDescribe v0-1 (KIP-848).

Behaviour: each consumer-protocol group's state (Empty, Assigning, Reconciling, Stable), group
epoch, target assignment epoch, assignor and members, each with its epoch, subscription, current
and target assignment. A classic group or an unknown one is GROUP_ID_NOT_FOUND with Kafka's
message, which is how Kafka's admin client knows to describe it with DescribeGroups instead.
Version notes: v1 adds each member's type (1: consumer protocol; classic members cannot join
a consumer group here).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from coordinator.group.consumer_persist import ConsumerGroupDescription, MemberDescription
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized_operations, denied, unauthorized
from ..handler import Handler, RequestContext
from .group_common import group_coordinator

if TYPE_CHECKING:
    from protocol.request_types.consumer_group_describe import ConsumerGroupDescribeRequest

_NO_OPERATIONS = -2147483648
# ConsumerGroupDescribe v1's MemberType: 0 a classic-protocol member of a converted group, 1 a
# consumer-protocol member (-1, unknown, is what v0 readers assume).
_CLASSIC_MEMBER, _CONSUMER_MEMBER = 0, 1


def _assignment(named: Mapping[str, tuple[uuid.UUID, frozenset[int]]]) -> dict[str, object]:
    return {"topic_partitions": [{"topic_id": tid, "topic_name": name, "partitions": sorted(ps)}
                                 for name, (tid, ps) in named.items()]}


def _member(d: MemberDescription) -> dict[str, object]:
    m = d.member
    return {
        "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
        "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "assignment": _assignment(d.assigned), "target_assignment": _assignment(d.target),
        "member_type": _CLASSIC_MEMBER if m.uses_classic_protocol else _CONSUMER_MEMBER,
    }


def _group(d: ConsumerGroupDescription) -> dict[str, object]:
    return {
        "error_code": d.error, "error_message": d.error_message, "group_id": d.group_id,
        "group_state": d.state, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
        "assignor_name": d.assignor_name, "members": [_member(m) for m in d.members],
        "authorized_operations": _NO_OPERATIONS,
    }


async def handle(ctx: RequestContext, request: ConsumerGroupDescribeRequest) -> object:
    refused = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, request.group_ids)
    allowed = [g for g in request.group_ids if g not in refused]
    try:
        described = await group_coordinator(ctx).consumer_group_describe(allowed) if allowed else []
    except KafkaError as exc:
        described = [ConsumerGroupDescription(group_id=g, error=exc.code, error_message=exc.message)
                     for g in allowed]
    by_id = {d.group_id: d for d in described}
    for group_id in refused:
        refusal = denied(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)
        by_id[group_id] = ConsumerGroupDescription(group_id=group_id, error=refusal.code, error_message=refusal.message)
    groups = [_group(by_id[g]) for g in request.group_ids]
    if request.include_authorized_operations:
        for group_id, group in zip(request.group_ids, groups, strict=True):
            if group["error_code"] is ErrorCode.none:
                group["authorized_operations"] = authorized_operations(ctx, ResourceType.GROUP, group_id)
    return ctx.respond({"throttle_time": 0, "groups": groups})


HANDLER = Handler(api_key=ApiKey.CONSUMER_GROUP_DESCRIBE, min_version=0, max_version=1, handle=handle)
