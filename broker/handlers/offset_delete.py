"""OffsetDelete v0.

Behaviour: deletes committed offsets of a group (tombstones in __consumer_offsets). An Empty group
may lose any of them; a live consumer group only those of topics no member subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC per partition); a live group of another protocol type is
NON_EMPTY_GROUP, an unknown group GROUP_ID_NOT_FOUND. Unknown partitions get
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require, unauthorized
from ..handler import Handler, RequestContext
from .group_common import by_topic, group_coordinator

if TYPE_CHECKING:
    from protocol.request_types.offset_delete import OffsetDeleteRequest


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> object:
    require(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id)
    wanted = [TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    refused = unauthorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    results: dict[TopicPartition, ErrorCode] = dict.fromkeys(
        (tp for tp in wanted if tp.topic in refused), ErrorCode.topic_authorization_failed)
    for tp in (tp for tp in wanted if tp not in results):
        meta = ctx.broker.logs.topics.get(tp.topic)
        if meta is None or not 0 <= tp.partition < meta.partitions:
            results[tp] = ErrorCode.unknown_topic_or_partition
    try:
        error, deleted = await group_coordinator(ctx).delete_offsets(
            request.group_id, [tp for tp in wanted if tp not in results])
    except KafkaError as exc:
        error, deleted = exc.code, {}
    if error is not ErrorCode.none:
        return ctx.respond({"error_code": error, "throttle_time": 0, "topics": []})
    ordered = {tp: results[tp] if tp in results else deleted[tp] for tp in wanted}
    topics = by_topic(ordered, lambda p, code: {"partition_index": p, "error_code": code})
    return ctx.respond({"error_code": ErrorCode.none, "throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.OFFSET_DELETE, min_version=0, max_version=0, handle=handle)
