"""Error codes of the transaction APIs as each request version knows them (not a handler).

PRODUCER_FENCED (90) only exists for InitProducerId >= 4, EndTxn / AddPartitionsToTxn /
AddOffsetsToTxn >= 2; older versions get INVALID_PRODUCER_EPOCH (47), as Kafka's KafkaApis maps
them. None of these responses carries error_message, so the cause is logged with the
transactional id instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from protocol.errors import ErrorCode, KafkaError

__all__ = ("txn_error_code", "txn_outcome")

log = logging.getLogger("broker.transactions")
_QUIET = frozenset({ErrorCode.concurrent_transactions, ErrorCode.coordinator_load_in_progress})


def txn_error_code(exc: KafkaError, version: int, fenced_since: int, api: str, txn_id: str | None) -> ErrorCode:
    code = exc.code
    if code is ErrorCode.producer_fenced and version < fenced_since:
        code = ErrorCode.invalid_producer_epoch
    level = logging.DEBUG if exc.code in _QUIET else logging.WARNING
    log.log(level, "%s v%d for '%s' -> %s: %s", api, version, txn_id, code.name, exc.message or code.name)
    return code


async def txn_outcome(
    call: Awaitable[object], version: int, fenced_since: int, api: str, txn_id: str | None
) -> ErrorCode:
    """The error code of a transaction API whose answer is only a code: NONE once call is done."""
    try:
        await call
    except KafkaError as exc:
        return txn_error_code(exc, version, fenced_since, api, txn_id)
    return ErrorCode.none
