"""ListGroups v0-5.

Behaviour: every group this node coordinates (all of them), with its protocol type ("" for groups
that only store offsets) and, v4+, its state; v4's states_filter keeps the named states
(case-insensitive, as Kafka does).
Version notes: v5 (KIP-848) adds each group's type, "classic", "consumer" or "share" (KIP-932), and a
types_filter (case-insensitive); a consumer group's states are Empty, Assigning, Reconciling and
Stable, a share group's Empty and Stable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.group.consumer_group import ConsumerGroupState
from coordinator.group.state import GroupState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..authorizer.checks import authorized
from ..handler import Handler, RequestContext
from .group_common import group_coordinator

if TYPE_CHECKING:
    from protocol.request_types.list_groups import ListGroupsRequest


def _group_type(state: GroupState | ConsumerGroupState) -> str:
    # Kafka's GroupType names, as ListGroups v5 reports them.
    return "consumer" if isinstance(state, ConsumerGroupState) else "classic"


def _share_groups(ctx: RequestContext, types: set[str], states: set[str]) -> list[dict[str, str]]:
    """Share groups (KIP-932), type and protocol type "share", as Kafka lists them."""
    coordinator = ctx.broker.share_coordinator
    if coordinator is None or (types and "share" not in types):
        return []
    return [{"group_id": g, "protocol_type": "share", "group_state": state, "group_type": "share"}
            for g, state in coordinator.list_groups()
            if (not states or state.lower() in states)
            and authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g, log_denied=False)]


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> object:
    try:
        listed = await group_coordinator(ctx).list_groups(getattr(request, "states_filter", ()))
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "groups": []})
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        # Kafka: without DESCRIBE on the CLUSTER, the groups the caller may DESCRIBE.
        listed = [g for g in listed if authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g[0],
                                                  log_denied=False)]
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    groups = [
        {"group_id": group_id, "protocol_type": protocol_type, "group_state": str(state),
         "group_type": _group_type(state)}
        for group_id, protocol_type, state in listed
        if not types or _group_type(state) in types
    ] + _share_groups(ctx, types, {s.lower() for s in getattr(request, "states_filter", ())})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "groups": groups})


HANDLER = Handler(api_key=ApiKey.LIST_GROUPS, min_version=0, max_version=5, handle=handle)
