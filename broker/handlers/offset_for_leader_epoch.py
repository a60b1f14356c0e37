"""OffsetForLeaderEpoch v2-4.

Behaviour: storage is never truncated (one leader writes at a time, fenced by its epoch, and a
new leader continues at the stored next offset), so no epoch ends before the log end offset: a
requested epoch of 0 or above gets the log end offset, with the requested epoch capped at the
partition's (always 0 in local mode); a negative epoch is UNDEFINED. Consumers compare the end
offset with their position, which it never falls below. A current_leader_epoch older than the
partition's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, a partition led elsewhere
NOT_LEADER_OR_FOLLOWER. Java consumers call this to validate positions after seeks and leader
changes (KIP-320).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..authorizer.checks import authorized, denied, unauthorized
from ..handler import Handler, RequestContext, check_leader

if TYPE_CHECKING:
    from protocol.request_types.offset_for_leader_epoch import OffsetForLeaderEpochRequest, OffsetForLeaderPartition


def _answer(ctx: RequestContext, topic: str, p: OffsetForLeaderPartition, refused: frozenset[str]) -> dict[str, object]:
    entry: dict[str, object] = {"partition": p.partition, "error_code": ErrorCode.none, "leader_epoch": -1,
                                "end_offset": -1}
    try:
        if topic in refused:
            raise denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
        tp = TopicPartition(topic, p.partition)
        epoch = check_leader(ctx.broker.cluster, tp, getattr(p, "current_leader_epoch", -1))
        plog = ctx.broker.logs.get_log(tp)
    except KafkaError as exc:
        return entry | {"error_code": exc.code}
    if p.leader_epoch < 0:
        return entry
    return entry | {"leader_epoch": min(p.leader_epoch, epoch), "end_offset": plog.log_end_offset}


async def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> object:
    # Kafka: CLUSTER_ACTION (a follower) covers every topic; otherwise DESCRIBE on each.
    refused = frozenset() if authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME,
                                        log_denied=False) \
        else unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.topic for t in request.topics))
    topics = [{"topic": t.topic, "partitions": [_answer(ctx, t.topic, p, refused) for p in t.partitions]}
              for t in request.topics]
    return ctx.respond({"throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH, min_version=2, max_version=4, handle=handle)
