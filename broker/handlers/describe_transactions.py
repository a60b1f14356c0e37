"""DescribeTransactions v0 (KIP-664).

Behaviour: per transactional id its state (Kafka's names: Ongoing, PrepareCommit, ...), producer
id and epoch, timeout, start time and partitions, so an operator can find a hanging transaction
with kafka-transactions.sh. Unknown (or expired) ids get TRANSACTIONAL_ID_NOT_FOUND; in cluster
mode an id whose shard another broker coordinates gets NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS
while its shard loads here), as Kafka answers.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied
from ..handler import Handler, RequestContext
from .txn_routing import txn_coordinator

if TYPE_CHECKING:
    from protocol.request_types.describe_transactions import DescribeTransactionsRequest


def _start_time(ms: int) -> datetime.datetime:
    # Kafka sends -1 when no transaction has started; kio types the field as a datetime.
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


def _unknown_code(ctx: RequestContext, txn_id: str) -> ErrorCode:
    """Why an id is not described: empty, served by another broker (cluster mode), or unknown."""
    if not txn_id:
        return ErrorCode.invalid_request
    try:
        txn_coordinator(ctx).check_coordinator(txn_id)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.transactional_id_not_found


def _state(ctx: RequestContext, txn_id: str) -> dict[str, object]:
    refused = txn_id and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id)
    md = txn_coordinator(ctx).describe(txn_id) if txn_id and not refused else None
    if md is None:
        code = _unknown_code(ctx, txn_id)
        if refused:
            code = denied(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id).code
        return {"error_code": code, "transactional_id": txn_id, "transaction_state": "",
                "transaction_timeout": 0, "transaction_start_time": _start_time(-1), "producer_id": -1,
                "producer_epoch": -1, "topics": []}
    topics: dict[str, list[int]] = {}
    for tp in sorted(md.topic_partitions):
        # Only the partitions of topics the caller may DESCRIBE, as Kafka lists them.
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, tp.topic, log_denied=False):
            continue
        topics.setdefault(tp.topic, []).append(tp.partition)
    return {
        "error_code": ErrorCode.none, "transactional_id": txn_id,
        "transaction_state": md.state.display_name, "transaction_timeout": md.txn_timeout_ms,
        "transaction_start_time": _start_time(md.txn_start_timestamp), "producer_id": md.producer_id,
        "producer_epoch": md.producer_epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
    }


async def handle(ctx: RequestContext, request: DescribeTransactionsRequest) -> object:
    return ctx.respond({"throttle_time": 0,
                        "transaction_states": [_state(ctx, t) for t in request.transactional_ids]})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_TRANSACTIONS, min_version=0, max_version=0, handle=handle)
