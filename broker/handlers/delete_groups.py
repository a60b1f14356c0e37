"""DeleteGroups v0-3.

Behaviour: deletes Empty groups with their offsets (tombstones in __consumer_offsets, so they stay
deleted after a restart), and Empty share groups with their share-partition state
(kafka-share-groups --delete; in cluster mode at their share coordinators, with
DeleteShareGroupState). A group with members is NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND. v3 (protocol/newer_schemas.py) adds a message to each result, which Kafka 4.4
leaves null and so do we: the error code says it all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.coordinator import ShareCoordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import unauthorized
from ..handler import Handler, RequestContext
from .group_common import group_coordinator

if TYPE_CHECKING:
    from protocol.request_types.delete_groups import DeleteGroupsRequest


async def _delete_share_group(share: ShareCoordinator, group_id: str) -> ErrorCode:
    """A share group (KIP-932) goes with its share-partition state (tombstones in __share_group_state)."""
    try:
        await share.delete_group(group_id)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.none


async def _is_share_group(share: ShareCoordinator, group_id: str) -> bool:
    try:
        return await share.known(group_id) is not None
    except KafkaError:  # coordinated elsewhere: the group coordinator answers NOT_COORDINATOR
        return False


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> object:
    names = list(request.groups_names)
    refused = unauthorized(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    share = ctx.broker.share_coordinator
    shared = [g for g in names if g not in refused and share is not None and await _is_share_group(share, g)]
    allowed = [g for g in names if g not in refused and g not in shared]
    try:
        results = await group_coordinator(ctx).delete_groups(allowed) if allowed else {}
    except KafkaError as exc:
        results = dict.fromkeys(allowed, exc.code)
    for group_id in shared:
        assert share is not None  # shared is empty without a share coordinator
        results[group_id] = await _delete_share_group(share, group_id)
    results |= dict.fromkeys(refused, ErrorCode.group_authorization_failed)
    return ctx.respond({
        "throttle_time": 0,
        "results": [{"group_id": g, "error_code": results[g]} for g in dict.fromkeys(names)],
    })


HANDLER = Handler(api_key=ApiKey.DELETE_GROUPS, min_version=0, max_version=3, handle=handle)
