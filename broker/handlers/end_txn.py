"""EndTxn v0-5.

Behaviour: commits or aborts the producer's transaction. The answer goes out once
PrepareCommit / PrepareAbort is persisted; the markers follow, and until they are all written the
id answers CONCURRENT_TRANSACTIONS. v0-4 (Transactions V1): a retry after completion with the same
result is NONE; the opposite result, or EndTxn with no transaction open, is INVALID_TXN_STATE.
v5 (Transactions V2, KIP-890): the coordinator bumps the epoch, writes the markers with it and
answers with the producer id and epoch to use next (a new id at epoch 0 when the epoch is
exhausted); an abort with nothing added succeeds; a retry is the previous epoch
(coordinator/transaction/end_txn.py).
Version notes: v2+ knows PRODUCER_FENCED; v5 adds ProducerId / ProducerEpoch (-1 on errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .txn_errors import txn_error_code
from .txn_routing import txn_coordinator

if TYPE_CHECKING:
    from protocol.request_types.end_txn import EndTxnRequest


async def handle(ctx: RequestContext, request: EndTxnRequest) -> object:
    require(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    try:
        result = await txn_coordinator(ctx).end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
            tv2=ctx.version >= 5)
    except KafkaError as exc:
        code = txn_error_code(exc, ctx.version, 2, "EndTxn", request.transactional_id)
        return ctx.respond({"throttle_time": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": result.producer_id,
                        "producer_epoch": result.epoch})


HANDLER = Handler(api_key=ApiKey.END_TXN, min_version=0, max_version=5, handle=handle)
