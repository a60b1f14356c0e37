"""AddPartitionsToTxn v0-5.

Behaviour: adds partitions to the producer's transaction (persisted before the answer), which
begins it if needed. Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and then the
others OPERATION_NOT_ATTEMPTED, with no state change, as Kafka answers. While the previous
transaction's markers are being written: CONCURRENT_TRANSACTIONS (clients retry), once they have
been waited for up to add.partitions.to.txn.retry.backoff.max.ms (as a V2 Produce's add is
retried): the next transaction's add comes right after EndTxn answered, and its markers usually
take a flush or two, less than the client's own back-off (librdkafka's and Java's 20 ms).
v4-5 (batched, broker to broker, as Kafka's brokers send it to the coordinator): with
verify_only=false the partitions join the transaction as a V2 Produce adds them (what another
broker of the cluster sends when a Produce v12+ reaches it and the coordinator is here); with
verify_only=true nothing changes and each partition answers NONE if it is in the producer's
ongoing transaction, else TRANSACTION_ABORTABLE (Kafka's verification, KIP-890 part 1).
Version notes: v2+ knows PRODUCER_FENCED; clients use v3 and below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require, require_cluster, unauthorized
from ..handler import Handler, RequestContext
from .txn_errors import txn_error_code, txn_outcome
from .txn_routing import txn_coordinator

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.add_partitions_to_txn import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnRequestV4Plus,
        AddPartitionsToTxnTopic,
        AddPartitionsToTxnTransaction,
    )


def _is_v4_plus(entity: AddPartitionsToTxnRequest) -> TypeIs[AddPartitionsToTxnRequestV4Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 4


def _results(topics: Iterable[AddPartitionsToTxnTopic], code_for: Callable[[TopicPartition], ErrorCode],
             ) -> list[dict[str, object]]:
    return [
        {"name": t.name, "results_by_partition": [
            {"partition_index": p, "partition_error_code": code_for(TopicPartition(t.name, p))}
            for p in t.partitions]}
        for t in topics
    ]


def _verify(ctx: RequestContext, txn: AddPartitionsToTxnTransaction, partitions: list[TopicPartition],
            ) -> dict[TopicPartition, ErrorCode]:
    try:
        codes: dict[TopicPartition, ErrorCode] = txn_coordinator(ctx).verify_partitions(
            txn.transactional_id, txn.producer_id, txn.producer_epoch, partitions)
    except KafkaError as exc:
        return dict.fromkeys(partitions, txn_error_code(exc, 5, 2, "AddPartitionsToTxn", txn.transactional_id))
    return codes


async def _one_transaction(ctx: RequestContext, txn: AddPartitionsToTxnTransaction) -> dict[str, object]:
    partitions = [TopicPartition(t.name, p) for t in txn.topics for p in t.partitions]
    if txn.verify_only:
        codes = _verify(ctx, txn, partitions)
    else:
        call = txn_coordinator(ctx).add_partitions(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                                         partitions, tv2=True)
        codes = dict.fromkeys(partitions, await txn_outcome(call, ctx.version, 2, "AddPartitionsToTxn",
                                                            txn.transactional_id))
    return {"transactional_id": txn.transactional_id,
            "topic_results": _results(txn.topics, lambda tp: codes[tp])}


async def handle(ctx: RequestContext, request: AddPartitionsToTxnRequest) -> object:
    if _is_v4_plus(request):
        # Kafka: v4+ comes from brokers, whose principal needs CLUSTER_ACTION (or super.users).
        require_cluster(ctx, AclOperation.CLUSTER_ACTION)
        results = [await _one_transaction(ctx, txn) for txn in request.transactions]
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "results_by_transaction": results})
    topics = request.v3_and_below_topics
    txn_id = request.v3_and_below_transactional_id
    require(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)
    partitions = [TopicPartition(t.name, p) for t in topics for p in t.partitions]
    # Existence, not a local log: in cluster mode the partitions are led by any broker.
    topics_now = ctx.broker.logs.topics
    refused = unauthorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in topics))
    failed = {tp: ErrorCode.topic_authorization_failed if tp.topic in refused else ErrorCode.unknown_topic_or_partition
              for tp in partitions
              if tp.topic in refused or (meta := topics_now.get(tp.topic)) is None
              or not 0 <= tp.partition < meta.partitions}
    if failed:
        def code_for(tp: TopicPartition) -> ErrorCode:
            return failed.get(tp, ErrorCode.operation_not_attempted)
    else:
        coordinator, config = txn_coordinator(ctx), ctx.broker.config
        await coordinator.markers_done(txn_id, min(config.add_partitions_to_txn_retry_backoff_max_ms,
                                                   config.request_timeout_ms) / 1000)
        call = coordinator.add_partitions(
            txn_id, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch, partitions)
        code = await txn_outcome(call, ctx.version, 2, "AddPartitionsToTxn", txn_id)

        def code_for(tp: TopicPartition) -> ErrorCode:
            return code
    return ctx.respond({"throttle_time": 0, "results_by_topic_v3_and_below": _results(topics, code_for)})


HANDLER = Handler(api_key=ApiKey.ADD_PARTITIONS_TO_TXN, min_version=0, max_version=5, handle=handle)
