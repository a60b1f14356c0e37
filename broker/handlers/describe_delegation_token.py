"""DescribeDelegationToken v1-3 (KIP-48).

Behaviour: refused (broker/handlers/delegation_token_common.py) with no tokens, as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey

from ..handler import Handler, RequestContext
from .delegation_token_common import refusal

if TYPE_CHECKING:
    from protocol.request_types.describe_delegation_token import DescribeDelegationTokenRequest


async def handle(ctx: RequestContext, request: DescribeDelegationTokenRequest) -> object:
    return ctx.respond({"error_code": refusal(ctx), "tokens": [], "throttle_time": 0})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_DELEGATION_TOKEN, min_version=1, max_version=3, handle=handle)
