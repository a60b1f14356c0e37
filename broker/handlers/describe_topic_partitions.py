"""DescribeTopicPartitions v0.

Behaviour: the topics' partitions as Metadata describes them (leaders and epochs from the
ClusterView), paged as Kafka pages them: topics in name order (all topics, internal ones
included, when the list is empty), starting at the cursor's topic and partition, at most
response_partition_limit partitions (capped at 2000, Kafka's
max.request.partition.size.limit) per answer; when partitions remain, next_cursor names the first
of them. Unknown topics come back with UNKNOWN_TOPIC_OR_PARTITION; a cursor naming a topic the
request does not list gives INVALID_REQUEST. Java admin clients 3.7+ describe topics with this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, unauthorized
from ..handler import Handler, RequestContext
from .metadata import error_entry, topic_entry

if TYPE_CHECKING:
    from protocol.request_types.describe_topic_partitions import DescribeTopicPartitionsRequest

MAX_PARTITION_LIMIT = 2000


def _names(ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> list[str]:
    requested = {t.name for t in request.topics}
    every = ctx.broker.logs.topics
    # All topics: those the caller may not DESCRIBE are left out (named ones answer the error).
    hidden = () if requested else unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, every, log_denied=False)
    names = sorted(requested or (n for n in every if n not in hidden))
    cursor = request.cursor
    if cursor is None:
        return names
    if requested and cursor.topic_name not in requested:
        raise KafkaError(ErrorCode.invalid_request, f"the cursor's topic {cursor.topic_name!r} is not requested")
    return [n for n in names if n >= cursor.topic_name]


async def handle(ctx: RequestContext, request: DescribeTopicPartitionsRequest) -> object:
    try:
        names = _names(ctx, request)
    except KafkaError as exc:  # Kafka's error response: the error on every requested topic
        errors = [error_entry(t.name, exc.code) for t in request.topics]
        return ctx.respond({"throttle_time": 0, "topics": errors, "next_cursor": None})
    limit = max(min(request.response_partition_limit, MAX_PARTITION_LIMIT), 1)
    cursor = request.cursor
    topics: list[Mapping[str, object]] = []
    next_cursor = None
    for name in names:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            topics.append(error_entry(name, ErrorCode.topic_authorization_failed))
            continue
        meta = ctx.broker.logs.topics.get(name)
        if meta is None:
            topics.append(error_entry(name, ErrorCode.unknown_topic_or_partition))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if limit == 0:
            next_cursor = {"topic_name": name, "partition_index": start}
            break
        entry = topic_entry(meta, ctx.broker.cluster)
        # Empty ELR lists, not null, as Kafka sends them: Java clients 3.9 dereference them.
        partitions = [{**p, "eligible_leader_replicas": [], "last_known_elr": []}
                      for p in entry["partitions"][start : start + limit]]
        limit -= len(partitions)
        topics.append(dict(entry, partitions=partitions))
        if start + len(partitions) < meta.partitions:
            next_cursor = {"topic_name": name, "partition_index": start + len(partitions)}
            break
    return ctx.respond({"throttle_time": 0, "topics": topics, "next_cursor": next_cursor})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_TOPIC_PARTITIONS, min_version=0, max_version=0, handle=handle)
