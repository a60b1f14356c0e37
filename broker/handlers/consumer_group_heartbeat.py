"""ConsumerGroupHeartbeat v0-1 (KIP-848, the consumer group protocol).

Behaviour: the member joins (epoch 0), heartbeats (its epoch) or leaves (-1; -2 for a static
member that will be back) a consumer-protocol group; the coordinator answers with the member's
epoch, the heartbeat interval (group.consumer.heartbeat.interval.ms) and, when it changed or the
request was a full one, the partitions the member may own now. Partitions move incrementally:
a member first revokes what it must give up, and a partition is assigned to its new owner only
once the old one no longer reports it. Errors carry Kafka's message: INVALID_REQUEST (a malformed
first request), UNSUPPORTED_ASSIGNOR (group.remote.assignor not in group.consumer.assignors),
INVALID_REGULAR_EXPRESSION, FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID (the member must rejoin with
epoch 0), UNRELEASED_INSTANCE_ID / FENCED_INSTANCE_ID (static members), GROUP_ID_NOT_FOUND (a
classic group with members), GROUP_MAX_SIZE_REACHED (group.consumer.max.size). With an authorizer, a
subscribed topic name the member may not DESCRIBE fails the heartbeat with TOPIC_AUTHORIZATION_FAILED
(Kafka 4 checks this before the coordinator).
Version notes: v1 adds SubscribedTopicRegex; the member id is the client's own from v1 (v0 may
leave it empty on join and the coordinator picks one).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from coordinator.group.consumer_heartbeat import HeartbeatRequest
from coordinator.group.consumer_member import Assignment
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require, unauthorized
from ..handler import Handler, RequestContext
from .group_common import client_host, group_coordinator, ms

if TYPE_CHECKING:
    from protocol.request_types.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, TopicPartitions


def _owned(topic_partitions: Sequence[TopicPartitions] | None) -> Assignment | None:
    if topic_partitions is None:
        return None
    owned: dict[uuid.UUID, frozenset[int]] = {}
    for t in topic_partitions:
        if t.topic_id is not None:
            owned[t.topic_id] = owned.get(t.topic_id, frozenset()) | frozenset(int(p) for p in t.partitions)
    return owned


def _request(ctx: RequestContext, request: ConsumerGroupHeartbeatRequest) -> HeartbeatRequest:
    names = request.subscribed_topic_names
    return HeartbeatRequest(
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=ms(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        owned=_owned(request.topic_partitions),
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
    )


async def handle(ctx: RequestContext, request: ConsumerGroupHeartbeatRequest) -> object:
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    if request.subscribed_topic_names and unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                       request.subscribed_topic_names):
        # Kafka 4's KafkaApis.handleConsumerGroupHeartbeat: one subscribed topic the member may not
        # DESCRIBE fails the whole heartbeat, before the coordinator sees it.
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.topic_authorization_failed,
                            "error_message": None, "member_id": None, "member_epoch": 0,
                            "heartbeat_interval": 0})
    try:
        result = await group_coordinator(ctx).consumer_group_heartbeat(request.group_id, _request(ctx, request))
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "error_message": exc.message,
                            "member_id": None, "member_epoch": -1, "heartbeat_interval": 0})
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": t, "partitions": sorted(ps)}
                                           for t, ps in sorted(result.assignment.items())]}
    return ctx.respond({
        "throttle_time": 0, "error_code": ErrorCode.none, "member_id": result.member_id,
        "member_epoch": result.member_epoch, "heartbeat_interval": result.heartbeat_interval_ms,
        "assignment": assignment,
    })


HANDLER = Handler(api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT, min_version=0, max_version=1, handle=handle)
