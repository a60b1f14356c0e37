"""ShareGroupHeartbeat v1 (KIP-932).

Behaviour: a share group member joins (epoch 0, naming the topics it subscribes to), heartbeats
(its epoch) or leaves (-1); the answer carries its epoch, share.heartbeat.interval.ms and, when it
changed or the member joined, the partitions it may fetch from (the "simple" assignor: partitions
spread evenly, shared when members outnumber them). A member that leaves or is not heard from
within share.session.timeout.ms has its acquired records released. Errors carry Kafka's message:
INVALID_REQUEST (no member id, or no subscription on joining), UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED (group.share.max.size), GROUP_ID_NOT_FOUND (the id is a
classic or consumer group's), UNSUPPORTED_VERSION while share.version is 0; GROUP_AUTHORIZATION_FAILED
without READ on the group, TOPIC_AUTHORIZATION_FAILED for a subscribed topic without DESCRIBE.
Version notes: v0 (Kafka 4.0's early access) is not served, as in Kafka 4.1+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.group import ShareHeartbeat
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import denied, require, unauthorized
from ..handler import Handler, RequestContext
from .group_common import client_host
from .share_common import share_coordinator

if TYPE_CHECKING:
    from protocol.request_types.share_group_heartbeat import ShareGroupHeartbeatRequest


def _failed(ctx: RequestContext, exc: KafkaError) -> object:
    return ctx.respond({"throttle_time": 0, "error_code": exc.code, "error_message": exc.message,
                        "member_id": None, "member_epoch": 0, "heartbeat_interval": 0})


async def handle(ctx: RequestContext, request: ShareGroupHeartbeatRequest) -> object:
    names = request.subscribed_topic_names
    try:
        require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
        refused = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names or ())
        if refused:
            raise denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, sorted(refused)[0])
        hb = ShareHeartbeat(member_id=request.member_id, member_epoch=request.member_epoch, rack_id=request.rack_id,
                            subscribed_topic_names=None if names is None else tuple(names),
                            client_id=ctx.header.client_id or "", client_host=client_host(ctx))
        result, interval_ms = await share_coordinator(ctx).heartbeat(request.group_id, hb)
    except KafkaError as exc:
        return _failed(ctx, exc)
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": t, "partitions": sorted(ps)}
                                           for t, ps in sorted(result.assignment.items())]}
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "member_id": result.member_id, "member_epoch": result.member_epoch,
                        "heartbeat_interval": interval_ms, "assignment": assignment})


HANDLER = Handler(api_key=ApiKey.SHARE_GROUP_HEARTBEAT, min_version=1, max_version=1, handle=handle)
