"""DescribeClientQuotas v0-1.

Behaviour: eosbroker sets no client quotas and throttles nobody, so every filter matches nothing:
the answer is an empty list, as Kafka's is before any quota is set (kafka-configs --describe
--entity-type users prints nothing). A component with a match type other than exact (0), default
(1) or any (2) is INVALID_REQUEST, as Kafka's ClientQuotaFilterComponent parsing refuses it.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

MATCH_TYPES = frozenset({0, 1, 2})  # MATCH_TYPE_EXACT, _DEFAULT, _SPECIFIED (any)


async def handle(ctx: RequestContext, request: Any) -> Any:
    require_cluster(ctx, AclOperation.DESCRIBE_CONFIGS)
    bad = [c.match_type for c in request.components if c.match_type not in MATCH_TYPES]
    if bad:
        raise KafkaError(ErrorCode.invalid_request, f"Unexpected match type: {bad[0]}")
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "entries": []})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_CLIENT_QUOTAS, min_version=0, max_version=1, handle=handle)
