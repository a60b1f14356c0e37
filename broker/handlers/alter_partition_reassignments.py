"""AlterPartitionReassignments v0-1.

Behaviour: a single node has no other broker to move a replica to. Per partition, as Kafka's
controller validates a reassignment: an unknown partition is UNKNOWN_TOPIC_OR_PARTITION; a null
replica list (cancel) is NO_REASSIGNMENT_IN_PROGRESS, since none ever runs; an empty list, a broker
named twice, or a broker other than this one is INVALID_REPLICA_ASSIGNMENT, with a message saying
so; [this broker] is the assignment already in force and succeeds without change.
Version notes: v1 adds allow_replication_factor_change, which changes nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext


def check_assignment(node_id: int, topic: str, partition: int, replicas: Sequence[int] | None) -> None:
    """Raise Kafka's error for a reassignment of topic-partition to replicas on this single node."""
    if replicas is None:
        raise KafkaError(ErrorCode.no_reassignment_in_progress,
                         f"no ongoing reassignment for {topic}-{partition}: a single node never reassigns")
    if not replicas:
        raise KafkaError(ErrorCode.invalid_replica_assignment,
                         "The manual partition assignment includes an empty replica list.")
    twice = sorted({b for b in replicas if list(replicas).count(b) > 1})
    if twice:
        raise KafkaError(ErrorCode.invalid_replica_assignment,
                         f"The manual partition assignment includes the broker {twice[0]} more than once.")
    others = [b for b in replicas if b != node_id]
    if others:
        raise KafkaError(ErrorCode.invalid_replica_assignment,
                         f"The manual partition assignment includes broker {others[0]}, but no such broker is "
                         f"registered: eosbroker is a single node (broker {node_id}), so {topic}-{partition} "
                         "stays where it is")


def _partition(ctx: RequestContext, topic: str, p: Any) -> dict[str, Any]:
    meta = ctx.broker.logs.topics.get(topic)
    try:
        if meta is None or not 0 <= p.partition_index < meta.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition,
                             f"partition {topic}-{p.partition_index} does not exist")
        check_assignment(ctx.broker.node_id, topic, p.partition_index, p.replicas)
    except KafkaError as exc:
        return {"partition_index": p.partition_index, "error_code": exc.code, "error_message": exc.message}
    return {"partition_index": p.partition_index, "error_code": ErrorCode.none, "error_message": None}


async def handle(ctx: RequestContext, request: Any) -> Any:
    require_cluster(ctx, AclOperation.ALTER)
    responses = [{"name": t.name, "partitions": [_partition(ctx, t.name, p) for p in t.partitions]}
                 for t in request.topics]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "allow_replication_factor_change": getattr(request, "allow_replication_factor_change", True),
                        "responses": responses})


HANDLER = Handler(api_key=ApiKey.ALTER_PARTITION_REASSIGNMENTS, min_version=0, max_version=1, handle=handle)
