"""AlterShareGroupOffsets v0 (KIP-932).

Behaviour: sets share-partition start offsets of a share group with no members (kafka-share-groups
--reset-offsets): each named partition forgets its record states and starts again at the offset
given, brought within the log's start and high watermark (in cluster mode as the partition's
leader answers them to ListOffsets); its records come back with delivery count
1. A group with members is NON_EMPTY_GROUP; an id of another group type GROUP_ID_NOT_FOUND; a
group that does not exist yet is made, empty. In cluster mode the group coordinator initializes
each share-partition's state at its share coordinator (InitializeShareGroupState) one state epoch
on, so its leader reads it again (coordinator/share/admin.py); what the share coordinator refuses
is that partition's error. Per partition: UNKNOWN_TOPIC_OR_PARTITION,
TOPIC_AUTHORIZATION_FAILED (READ on the topic), INVALID_REQUEST for a negative offset.
Without READ on the group the whole request is GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from coordinator.share.state_log import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied, require
from ..handler import Handler, RequestContext
from ..share_lag import high_watermarks, log_start_offsets
from .share_common import share_coordinator

if TYPE_CHECKING:
    from protocol.request_types.alter_share_group_offsets import AlterShareGroupOffsetsRequest


def _check(ctx: RequestContext, name: str, partition: int, offset: int) -> KafkaError | None:
    meta = ctx.broker.logs.topics.get(name)
    if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, name):
        return denied(ctx, AclOperation.READ, ResourceType.TOPIC, name)
    if meta is None or not 0 <= partition < meta.partitions:
        return KafkaError(ErrorCode.unknown_topic_or_partition, f"{name}-{partition} does not exist")
    if offset < 0:
        return KafkaError(ErrorCode.invalid_request, f"start offset {offset} of {name}-{partition} is negative")
    return None


async def _clamped(ctx: RequestContext, offsets: dict[SharePartitionKey, tuple[TopicPartition, int]],
                   ) -> dict[SharePartitionKey, tuple[TopicPartition, int]]:
    """Cluster mode: each start offset within its partition's [log start, high watermark], asked of
    the leaders (local mode clamps at the share-partition, which has the log)."""
    if ctx.broker.cluster.leads_everything or not offsets:
        return offsets
    tps = [tp for tp, _ in offsets.values()]
    starts, ends = await asyncio.gather(log_start_offsets(ctx.broker, tps), high_watermarks(ctx.broker, tps))
    out = {}
    for key, (tp, offset) in offsets.items():
        offset = max(offset, starts.get(tp, offset))
        out[key] = (tp, min(offset, ends.get(tp, offset)))
    return out


async def handle(ctx: RequestContext, request: AlterShareGroupOffsetsRequest) -> object:
    group_id = request.group_id
    errors: dict[tuple[str, int], KafkaError | None] = {}
    offsets: dict[SharePartitionKey, tuple[TopicPartition, int]] = {}
    for t in request.topics:
        for p in t.partitions:
            error = errors[(t.topic_name, p.partition_index)] = _check(ctx, t.topic_name, p.partition_index,
                                                                        p.start_offset)
            if error is None:
                meta = ctx.broker.logs.topics[t.topic_name]
                offsets[SharePartitionKey(group_id, meta.topic_id, p.partition_index)] = (
                    TopicPartition(t.topic_name, p.partition_index), p.start_offset)
    try:
        require(ctx, AclOperation.READ, ResourceType.GROUP, group_id)
        altered = await share_coordinator(ctx).alter_offsets(group_id, await _clamped(ctx, offsets))
        for key, error in altered.items():
            errors[(offsets[key][0].topic, key.partition)] = error
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "error_message": exc.message,
                            "responses": []})
    topics: dict[str, list[dict[str, object]]] = {}
    for (name, partition), error in errors.items():
        topics.setdefault(name, []).append({"partition_index": partition,
                                            "error_code": error.code if error else ErrorCode.none,
                                            "error_message": error.message if error else None})
    responses = [{"topic_name": name, "topic_id": m.topic_id if (m := ctx.broker.logs.topics.get(name)) else None,
                  "partitions": parts} for name, parts in topics.items()]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "responses": responses})


HANDLER = Handler(api_key=ApiKey.ALTER_SHARE_GROUP_OFFSETS, min_version=0, max_version=0, handle=handle)
