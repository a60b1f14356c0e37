"""AlterPartitionReassignments v0-1.

Behaviour: with one node, or brokers sharing their storage (cluster mode, where whichever live
broker holds a partition's lease leads it), no replica has data to move. Per partition, as Kafka's
controller validates a reassignment: an unknown partition is UNKNOWN_TOPIC_OR_PARTITION; a null
replica list (cancel) is NO_REASSIGNMENT_IN_PROGRESS, since none ever runs; an empty list, a broker
named twice, or a broker that is not registered is INVALID_REPLICA_ASSIGNMENT with Kafka's message
(replica_assignment.py); any other list succeeds at once and changes nothing, so
ListPartitionReassignments never lists one.
Version notes: v1 adds allow_replication_factor_change, which changes nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .replica_assignment import check_replicas

if TYPE_CHECKING:
    from protocol.request_types.alter_partition_reassignments import (
        AlterPartitionReassignmentsRequest,
        ReassignablePartition,
    )


def check_assignment(ctx: RequestContext, topic: str, partition: int, replicas: Sequence[int] | None) -> None:
    """Raise Kafka's error for a reassignment of topic-partition to replicas."""
    if replicas is None:
        raise KafkaError(ErrorCode.no_reassignment_in_progress,
                         f"no ongoing reassignment for {topic}-{partition}: eosbroker never moves a replica")
    check_replicas(ctx, replicas, None)


def _partition(ctx: RequestContext, topic: str, p: ReassignablePartition) -> dict[str, object]:
    meta = ctx.broker.logs.topics.get(topic)
    try:
        if meta is None or not 0 <= p.partition_index < meta.partitions:
            raise KafkaError(ErrorCode.unknown_topic_or_partition,
                             f"partition {topic}-{p.partition_index} does not exist")
        check_assignment(ctx, topic, p.partition_index, p.replicas)
    except KafkaError as exc:
        return {"partition_index": p.partition_index, "error_code": exc.code, "error_message": exc.message}
    return {"partition_index": p.partition_index, "error_code": ErrorCode.none, "error_message": None}


async def handle(ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> object:
    require_cluster(ctx, AclOperation.ALTER)
    responses = [{"name": t.name, "partitions": [_partition(ctx, t.name, p) for p in t.partitions]}
                 for t in request.topics]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "allow_replication_factor_change": getattr(request, "allow_replication_factor_change", True),
                        "responses": responses})


HANDLER = Handler(api_key=ApiKey.ALTER_PARTITION_REASSIGNMENTS, min_version=0, max_version=1, handle=handle)
