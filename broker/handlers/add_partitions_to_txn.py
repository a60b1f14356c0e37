"""AddPartitionsToTxn v0-3.

Behaviour: adds partitions to the producer's transaction (persisted before the answer), which
begins it if needed. Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and then the
others OPERATION_NOT_ATTEMPTED, with no state change, as Kafka answers. While the previous
transaction's markers are being written: CONCURRENT_TRANSACTIONS (clients retry).
Version notes: v4+ (batched, broker-to-broker) is not advertised; v2+ knows PRODUCER_FENCED.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import TopicPartition

from ..handler import Handler, RequestContext
from .txn_errors import txn_outcome


def _results(topics: Any, code_for: Any) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "results_by_partition": [
            {"partition_index": p, "partition_error_code": code_for(TopicPartition(t.name, p))}
            for p in t.partitions]}
        for t in topics
    ]


async def handle(ctx: RequestContext, request: Any) -> Any:
    topics = request.v3_and_below_topics
    txn_id = request.v3_and_below_transactional_id
    partitions = [TopicPartition(t.name, p) for t in topics for p in t.partitions]
    # Existence, not a local log: in cluster mode the partitions are led by any broker.
    topics_now = ctx.broker.logs.topics
    missing = {tp for tp in partitions
               if (meta := topics_now.get(tp.topic)) is None or not 0 <= tp.partition < meta.partitions}
    if missing:
        def code_for(tp: TopicPartition) -> ErrorCode:
            return ErrorCode.unknown_topic_or_partition if tp in missing else ErrorCode.operation_not_attempted
    else:
        call = ctx.broker.txn_coordinator.add_partitions(
            txn_id, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch, partitions)
        code = await txn_outcome(call, ctx.version, 2, "AddPartitionsToTxn", txn_id)

        def code_for(tp: TopicPartition) -> ErrorCode:
            return code
    return ctx.respond({"throttle_time": 0, "results_by_topic_v3_and_below": _results(topics, code_for)})


HANDLER = Handler(api_key=ApiKey.ADD_PARTITIONS_TO_TXN, min_version=0, max_version=3, handle=handle)
