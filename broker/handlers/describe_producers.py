"""DescribeProducers v0 (KIP-664).

Behaviour: the active producers of each partition as its log's producer state holds them: id,
epoch, last sequence and timestamp, coordinator epoch and the first offset of an open
transaction (-1 if none), which is what holds the partition's last stable offset back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import ActiveProducer, TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import denied, unauthorized
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.describe_producers import DescribeProducersRequest


def _producer(p: ActiveProducer) -> dict[str, object]:
    return {"producer_id": p.producer_id, "producer_epoch": p.producer_epoch, "last_sequence": p.last_sequence,
            "last_timestamp": p.last_timestamp, "coordinator_epoch": p.coordinator_epoch,
            "current_txn_start_offset": p.current_txn_start_offset}


async def _partition(ctx: RequestContext, tp: TopicPartition, refused: frozenset[str]) -> dict[str, object]:
    try:
        if tp.topic in refused:
            raise denied(ctx, AclOperation.READ, ResourceType.TOPIC, tp.topic)
        producers = [_producer(p) for p in await ctx.broker.logs.get_log(tp).active_producers()]
    except KafkaError as exc:
        return {"partition_index": tp.partition, "error_code": exc.code, "error_message": exc.message,
                "active_producers": []}
    return {"partition_index": tp.partition, "error_code": ErrorCode.none, "active_producers": producers}


async def handle(ctx: RequestContext, request: DescribeProducersRequest) -> object:
    refused = unauthorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    topics = []
    for t in request.topics:
        parts = [await _partition(ctx, TopicPartition(t.name, p), refused) for p in t.partition_indexes]
        topics.append({"name": t.name, "partitions": parts})
    return ctx.respond({"throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_PRODUCERS, min_version=0, max_version=0, handle=handle)
