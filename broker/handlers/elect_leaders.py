"""ElectLeaders v0-2.

Behaviour: every partition has one replica, this broker, and it leads; so, as Kafka answers when
the preferred leader already leads, each named partition gets ELECTION_NOT_NEEDED, for a preferred
(0) and an unclean (1) election alike, with a message saying why. A null partition list means every
partition, and then, as Kafka's controller does, partitions needing no election are left out (the
answer is empty). Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION; another election type:
INVALID_REQUEST.
Version notes: v0 has no election type (preferred) and no top-level error code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.elect_leaders import ElectLeadersRequest

PREFERRED, UNCLEAN = 0, 1
_TYPES: Final = {PREFERRED: "preferred", UNCLEAN: "unclean"}


def _result(ctx: RequestContext, tp: TopicPartition, election: str) -> dict[str, object]:
    meta = ctx.broker.logs.topics.get(tp.topic)
    if meta is None or not 0 <= tp.partition < meta.partitions:
        return {"partition_id": tp.partition, "error_code": ErrorCode.unknown_topic_or_partition,
                "error_message": f"partition {tp.topic}-{tp.partition} does not exist"}
    node = ctx.broker.node_id
    return {"partition_id": tp.partition, "error_code": ErrorCode.election_not_needed,
            "error_message": f"no {election} election needed for {tp.topic}-{tp.partition}: its only replica, "
                             f"broker {node}, already leads (eosbroker is a single node)"}


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> object:
    require_cluster(ctx, AclOperation.ALTER)
    kind = getattr(request, "election_type", PREFERRED)
    if kind not in _TYPES:
        raise KafkaError(ErrorCode.invalid_request, f"unknown election type {kind}")
    if request.topic_partitions is None:
        # Every partition, none of which needs an election: Kafka lists none of them.
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "replica_election_results": []})
    results = [
        {"topic": t.topic,
         "partition_result": [_result(ctx, TopicPartition(t.topic, p), _TYPES[kind]) for p in t.partitions]}
        for t in request.topic_partitions
    ]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "replica_election_results": results})


HANDLER = Handler(api_key=ApiKey.ELECT_LEADERS, min_version=0, max_version=2, handle=handle)
