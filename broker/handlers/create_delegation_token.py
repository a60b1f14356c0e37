"""CreateDelegationToken v1-3 (KIP-48).

Behaviour: refused (broker/handlers/delegation_token_common.py): no token is made. As Kafka's
CreateDelegationTokenResponse.prepareResponse, the answer names the owner (the request's, else the
caller) and, v3, the caller; timestamps -1, empty token id and HMAC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey

from ..handler import Handler, RequestContext
from .delegation_token_common import NO_TIMESTAMP, refusal

if TYPE_CHECKING:
    from protocol.request_types.create_delegation_token import CreateDelegationTokenRequest


async def handle(ctx: RequestContext, request: CreateDelegationTokenRequest) -> object:
    caller = ctx.session.principal
    owner_name = getattr(request, "owner_principal_name", None)
    owner_type = getattr(request, "owner_principal_type", None)
    # (a null owner type, which Kafka's response could not carry, is answered "")
    owner = (owner_type or "", owner_name) if owner_name else (caller.principal_type, caller.name)
    return ctx.respond({
        "error_code": refusal(ctx), "principal_type": owner[0], "principal_name": owner[1],
        "token_requester_principal_type": caller.principal_type, "token_requester_principal_name": caller.name,
        "issue_timestamp": NO_TIMESTAMP, "expiry_timestamp": NO_TIMESTAMP, "max_timestamp": NO_TIMESTAMP,
        "token_id": "", "hmac": b"", "throttle_time": 0,
    })


HANDLER = Handler(api_key=ApiKey.CREATE_DELEGATION_TOKEN, min_version=1, max_version=3, handle=handle)
