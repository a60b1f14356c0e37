"""ListTransactions v0-1 (KIP-664).

Behaviour: every transactional id this coordinator owns, filtered by state names, producer ids
and (v1) a minimum running time in ms; unknown state names are echoed in unknown_state_filters.
"""

from __future__ import annotations

from typing import Any

from coordinator.transaction.state import TxnState
from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized
from ..handler import Handler, RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    states, unknown = set(), []
    for name in request.state_filters:
        state = TxnState.from_name(name)
        if state is None:
            unknown.append(name)
        else:
            states.add(state)
    found = ctx.broker.txn_coordinator.list_transactions(
        frozenset(states), frozenset(request.producer_id_filters), field_or(request, "duration_filter", -1))
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


HANDLER = Handler(api_key=ApiKey.LIST_TRANSACTIONS, min_version=0, max_version=1, handle=handle)
