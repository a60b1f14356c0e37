"""CreatePartitions v0-3.

Behaviour: raises a topic's partition count; a count that is not larger gives
INVALID_PARTITIONS; manual assignments are checked as Kafka checks them (one per new partition,
registered brokers, one replica count: else INVALID_REPLICA_ASSIGNMENT); with shared
storage they fix nothing else. validate_only checks without changing. In cluster mode the answer
waits for the new partitions' leaders, as CreateTopics does.
More than 10000 new partitions in one request are refused whole (POLICY_VIOLATION), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .create_topics import LEADERS_WAIT_S, check_batch_size
from .replica_assignment import check_new_partitions

if TYPE_CHECKING:
    from protocol.request_types.create_partitions import (
        CreatePartitionsAssignment,
        CreatePartitionsRequest,
        CreatePartitionsTopic,
    )


def _new_partitions(ctx: RequestContext, topic: CreatePartitionsTopic) -> int:
    meta = ctx.broker.logs.topics.get(topic.name)
    return max(topic.count - (meta.partitions if meta else 0), 0)


def _check_assignments(ctx: RequestContext, topic: CreatePartitionsTopic,
                       assignments: Sequence[CreatePartitionsAssignment]) -> None:
    meta = ctx.broker.logs.topics.get(topic.name)
    if meta is None or topic.count <= meta.partitions:
        return  # the count's own error (unknown topic, not an increase) comes from create_partitions
    check_new_partitions(ctx, assignments, topic.count - meta.partitions)


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> object:
    check_batch_size(sum(_new_partitions(ctx, t) for t in request.topics))
    results = []
    added: list[TopicPartition] = []
    for topic in request.topics:
        entry: dict[str, object] = {"name": topic.name, "error_code": ErrorCode.none}
        try:
            require(ctx, AclOperation.ALTER, ResourceType.TOPIC, topic.name)
            if topic.assignments is not None:
                _check_assignments(ctx, topic, topic.assignments)
            before = _new_partitions(ctx, topic)
            await ctx.broker.logs.create_partitions(topic.name, topic.count, request.validate_only)
            added += [TopicPartition(topic.name, p) for p in range(topic.count - before, topic.count)]
        except KafkaError as exc:
            entry |= {"error_code": exc.code, "error_message": exc.message}
        results.append(entry)
    if added and not request.validate_only:
        await ctx.broker.cluster.await_leaders(added, min(request.timeout.total_seconds(), LEADERS_WAIT_S))
    return ctx.respond({"throttle_time": 0, "results": results})


HANDLER = Handler(api_key=ApiKey.CREATE_PARTITIONS, min_version=0, max_version=3, handle=handle)
