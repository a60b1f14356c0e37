"""InitProducerId v0-5.

Behaviour: without a transactional id (idempotent producers) a fresh producer id with epoch 0,
from blocks persisted in __transaction_state. With one, the transaction coordinator bumps the
epoch (or rotates to a new producer id when the epoch is exhausted), aborting and fencing an open
transaction of an older epoch first, which answers CONCURRENT_TRANSACTIONS until done.
transaction.timeout.ms above transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT.
Version notes: v3+ may carry the current producer id and epoch (KIP-360: a producer recovering
from an error keeps its id); both or neither must be set. v4+ knows PRODUCER_FENCED, older
versions get INVALID_PRODUCER_EPOCH. v6 (KIP-939's two-phase commit flags) is not advertised: Kafka
4.4 marks it unstable (latestVersionUnstable) and a stock broker advertises 0-5, so clients send v5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.transaction.metadata import ProducerIdAndEpoch
from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require, require_idempotent_write
from ..handler import Handler, RequestContext
from .txn_errors import txn_error_code
from .txn_routing import txn_coordinator

if TYPE_CHECKING:
    from protocol.request_types.init_producer_id import InitProducerIdRequest


def _expected(request: InitProducerIdRequest) -> ProducerIdAndEpoch | None:
    pid, epoch = field_or(request, "producer_id", -1), field_or(request, "producer_epoch", -1)
    if pid == -1 and epoch == -1:
        return None
    if pid == -1 or epoch == -1:
        raise KafkaError(ErrorCode.invalid_request,
                         f"producer id {pid} and epoch {epoch} must both be set or both be -1")
    return ProducerIdAndEpoch(producer_id=pid, epoch=epoch)


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> object:
    txn_id = request.transactional_id
    if txn_id is not None:
        require(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)
    else:
        require_idempotent_write(ctx)
    timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)
    try:
        result = await txn_coordinator(ctx).init_producer_id(txn_id, timeout_ms, _expected(request))
    except KafkaError as exc:
        code = txn_error_code(exc, ctx.version, 4, "InitProducerId", txn_id)
        return ctx.respond({"throttle_time": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": result.producer_id,
                        "producer_epoch": result.epoch})


HANDLER = Handler(api_key=ApiKey.INIT_PRODUCER_ID, min_version=0, max_version=5, handle=handle)
