"""ListTransactions v0-2 (KIP-664).

Behaviour: every transactional id this coordinator owns, filtered by state names, producer ids,
(v1) a minimum running time in ms and (v2) a transactional id pattern; unknown state names are
echoed in unknown_state_filters.
Version notes: v2's transactional_id_pattern (KIP-1152) is a regular expression in RE2/J's syntax,
as Kafka's TransactionStateManager compiles it (coordinator/re2j.py), that must match the whole
id (Kafka's matches(), not find()); null or empty lists every id. A pattern RE2/J would refuse
answers INVALID_REGULAR_EXPRESSION with nothing listed; the response has no message field, so
Kafka's message ("Transaction ID pattern `p` is not a valid regular expression: ...") is only
logged (DEBUG), as Kafka's is not sent either.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from coordinator.re2j import Re2jSyntaxError, compile_re2j
from coordinator.transaction.state import TxnState
from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized
from ..handler import Handler, RequestContext
from .txn_routing import txn_coordinator

if TYPE_CHECKING:
    from protocol.request_types.list_transactions import ListTransactionsRequest


def _pattern(pattern: str | None) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return compile_re2j(pattern)
    except Re2jSyntaxError as exc:
        raise KafkaError(ErrorCode.invalid_regular_expression,
                         f"Transaction ID pattern `{pattern}` is not a valid regular expression: {exc}.") from None


async def handle(ctx: RequestContext, request: ListTransactionsRequest) -> object:
    pattern = _pattern(field_or(request, "transactional_id_pattern", None))
    states, unknown = set(), []
    for name in request.state_filters:
        state = TxnState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            states.add(state)
    found = txn_coordinator(ctx).list_transactions(
        frozenset(states), frozenset(request.producer_id_filters), field_or(request, "duration_filter", -1), pattern)
    if unknown and not states:  # only unknown names: nothing can match
        found = []
    found = [md for md in found if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                              md.transactional_id, log_denied=False)]
    return ctx.respond({
        "throttle_time": 0, "error_code": ErrorCode.none, "unknown_state_filters": unknown,
        "transaction_states": [
            {"transactional_id": md.transactional_id, "producer_id": md.producer_id,
             "transaction_state": md.state.display_name} for md in found],
    })


HANDLER = Handler(api_key=ApiKey.LIST_TRANSACTIONS, min_version=0, max_version=2, handle=handle)
