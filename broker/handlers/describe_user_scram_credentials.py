"""DescribeUserScramCredentials v0.

Behaviour: the listener is PLAINTEXT without SASL, so no user has a SCRAM credential: a request
for every user (null) lists none; each named user gets RESOURCE_NOT_FOUND with Kafka's message, as
Kafka answers for a user without credentials; a user named twice gets DUPLICATE_RESOURCE.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext


def _result(user: str, count: int) -> dict[str, Any]:
    if count > 1:
        return {"user": user, "error_code": ErrorCode.duplicate_resource,
                "error_message": f"Cannot describe SCRAM credentials for the same user twice in a single request: "
                                 f"{user}", "credential_infos": []}
    return {"user": user, "error_code": ErrorCode.resource_not_found,
            "error_message": f"Attempt to describe a user credential that does not exist: {user}",
            "credential_infos": []}


async def handle(ctx: RequestContext, request: Any) -> Any:
    counts = Counter(u.name for u in request.users or ())
    results = [_result(user, count) for user, count in counts.items()]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, min_version=0, max_version=0, handle=handle)
