"""ExpireDelegationToken v1-2 (KIP-48).

Behaviour: refused (broker/handlers/delegation_token_common.py), expiry timestamp -1, as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey

from ..handler import Handler, RequestContext
from .delegation_token_common import NO_TIMESTAMP, refusal

if TYPE_CHECKING:
    from protocol.request_types.expire_delegation_token import ExpireDelegationTokenRequest


async def handle(ctx: RequestContext, request: ExpireDelegationTokenRequest) -> object:
    return ctx.respond({"error_code": refusal(ctx), "expiry_timestamp": NO_TIMESTAMP, "throttle_time": 0})


HANDLER = Handler(api_key=ApiKey.EXPIRE_DELEGATION_TOKEN, min_version=1, max_version=2, handle=handle)
