"""CreateAcls v1-3.

Behaviour: no authorizer (see describe_acls.py): every creation fails with SECURITY_DISABLED, as
in Kafka without authorizer.class.name.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext
from .describe_acls import NO_AUTHORIZER


async def handle(ctx: RequestContext, request: Any) -> Any:
    results = [{"error_code": ErrorCode.security_disabled, "error_message": NO_AUTHORIZER}
               for _ in request.creations]
    return ctx.respond({"throttle_time": 0, "results": results})


HANDLER = Handler(api_key=ApiKey.CREATE_ACLS, min_version=1, max_version=3, handle=handle)
