"""AlterClientQuotas v0-1.

Behaviour: eosbroker does not throttle clients, so it stores no quota it would then ignore: each
entry is answered INVALID_REQUEST with a message saying that client quotas are not enforced, and
nothing changes (validate_only alike). Kafka's tools print the message.
"""

from __future__ import annotations

from typing import Any, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

NOT_ENFORCED: Final = ("eosbroker does not enforce client quotas (it throttles no client), so it stores none; "
                       "nothing was changed")


async def handle(ctx: RequestContext, request: Any) -> Any:
    require_cluster(ctx, AclOperation.ALTER_CONFIGS)
    entries = [{"error_code": ErrorCode.invalid_request, "error_message": NOT_ENFORCED,
                "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]}
               for entry in request.entries]
    return ctx.respond({"throttle_time": 0, "entries": entries})


HANDLER = Handler(api_key=ApiKey.ALTER_CLIENT_QUOTAS, min_version=0, max_version=1, handle=handle)
