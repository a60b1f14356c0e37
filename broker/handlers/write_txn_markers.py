"""WriteTxnMarkers v1-2 (v0 was removed in Kafka 4.0).

Behaviour: for each marker (producer id and epoch, coordinator epoch, COMMIT or ABORT) write one
end-transaction control batch to each listed partition of this broker, validated as Kafka's leader
validates markers (coordinator/transaction/txn_markers.py): INVALID_PRODUCER_EPOCH for an epoch
older than the partition's, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch,
UNKNOWN_TOPIC_OR_PARTITION for a partition this broker has no log for. A marker for a producer the
partition does not know, or with no open transaction there, is written and changes nothing, as on
Kafka. The Admin client's abortTransaction (kafka-transactions abort) sends one ABORT marker for a
hanging transaction; in cluster mode transaction coordinators send the markers they must write.
An ABORT that ends an open transaction counts in eosbroker_transactions_aborted_total{cause="admin"}.

Version notes: v2 adds transaction_version (KIP-890's TV2). Kafka then also requires the marker's
epoch to be above the partition's; the Admin client sends 0, and this broker's own coordinator
writes its markers directly, so that stricter check is not applied here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from coordinator.transaction.outcomes import AbortCause
from coordinator.transaction.txn_markers import TxnMarkerEntry, write_txn_markers
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import TopicPartition

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..authorizer.checks import authorized, require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.write_txn_markers import WritableTxnMarker, WriteTxnMarkersRequest

log = logging.getLogger(__name__)


def _entry(marker: WritableTxnMarker) -> TxnMarkerEntry:
    partitions = tuple(TopicPartition(t.name, p) for t in marker.topics for p in t.partition_indexes)
    return TxnMarkerEntry(producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                          coordinator_epoch=marker.coordinator_epoch, commit=marker.transaction_result,
                          partitions=partitions)


def _open_on(ctx: RequestContext, entry: TxnMarkerEntry) -> set[TopicPartition]:
    """The marker's partitions where its producer has a transaction open (read before writing)."""
    logs = ctx.broker.logs
    return {tp for tp in entry.partitions
            if (plog := logs.find_log(tp)) is not None and plog.has_open_transaction(entry.producer_id)}


def _count_admin_abort(ctx: RequestContext, entry: TxnMarkerEntry, was_open: set[TopicPartition],
                       results: Mapping[TopicPartition, ErrorCode]) -> None:
    """eosbroker_transactions_aborted_total{cause="admin"}: an ABORT that ended a transaction
    (a marker for none changes nothing and is not counted; COMMIT markers come only from other
    brokers' coordinators in cluster mode, which count their own)."""
    coordinator = ctx.broker.txn_coordinator
    if coordinator is not None and not entry.commit and any(results[tp] is ErrorCode.none for tp in was_open):
        coordinator.outcomes.record(False, AbortCause.ADMIN)


async def _marker_result(ctx: RequestContext, marker: WritableTxnMarker) -> dict[str, object]:
    broker = ctx.broker
    entry = _entry(marker)
    was_open = _open_on(ctx, entry)
    results = await write_txn_markers(broker.logs, entry, lambda: broker.group_coordinator)
    _count_admin_abort(ctx, entry, was_open, results)
    topics: dict[str, list[dict[str, object]]] = {}
    for tp, code in results.items():
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "error_code": code})
    return {"producer_id": marker.producer_id,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> object:
    # Kafka: ALTER on the CLUSTER (an operator's kafka-transactions abort), else CLUSTER_ACTION.
    if not authorized(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    _note_sender(ctx)
    return ctx.respond({"markers": [await _marker_result(ctx, m) for m in request.markers]})


def _note_sender(ctx: RequestContext) -> None:
    """One INFO line per principal and listener that sends markers (in cluster mode the other
    brokers' coordinators): who the peers are and that they came in on the inter-broker listener."""
    seen = ctx.broker.marker_senders
    key = (str(ctx.session.principal), ctx.session.listener_name)
    if key not in seen:
        seen.add(key)
        log.info("WriteTxnMarkers from %s on listener %s (%s), %s", key[0], key[1], ctx.session.security_protocol,
                 ctx.peer)


HANDLER = Handler(api_key=ApiKey.WRITE_TXN_MARKERS, min_version=1, max_version=2, handle=handle)
