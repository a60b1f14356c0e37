"""EndTxn v0-4.

Behaviour: commits or aborts the producer's transaction. The answer goes out once
PrepareCommit / PrepareAbort is persisted; the markers follow, and until they are all written the
id answers CONCURRENT_TRANSACTIONS. A retry after completion with the same result is NONE; the
opposite result, or EndTxn with no transaction open, is INVALID_TXN_STATE.
Version notes: v2+ knows PRODUCER_FENCED; v5 (Transactions V2, epoch bump per transaction) is not
advertised.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey

from ..handler import Handler, RequestContext
from .txn_errors import txn_outcome


async def handle(ctx: RequestContext, request: Any) -> Any:
    call = ctx.broker.txn_coordinator.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed)
    code = await txn_outcome(call, ctx.version, 2, "EndTxn", request.transactional_id)
    return ctx.respond({"throttle_time": 0, "error_code": code})


HANDLER = Handler(api_key=ApiKey.END_TXN, min_version=0, max_version=4, handle=handle)
