"""AddOffsetsToTxn v0-4.

Behaviour: adds the group's __consumer_offsets partition (abs(hash(group_id)) %
offsets.topic.num.partitions) to the transaction, so that EndTxn writes a marker there and the
group coordinator then applies or drops the offsets sent with TxnOffsetCommit.
Version notes: v2+ knows PRODUCER_FENCED; v4 TRANSACTION_ABORTABLE is never sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .txn_errors import txn_outcome
from .txn_routing import txn_coordinator

if TYPE_CHECKING:
    from protocol.request_types.add_offsets_to_txn import AddOffsetsToTxnRequest


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> object:
    require(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    call = txn_coordinator(ctx).add_offsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id)
    code = await txn_outcome(call, ctx.version, 2, "AddOffsetsToTxn", request.transactional_id)
    return ctx.respond({"throttle_time": 0, "error_code": code})


HANDLER = Handler(api_key=ApiKey.ADD_OFFSETS_TO_TXN, min_version=0, max_version=4, handle=handle)
