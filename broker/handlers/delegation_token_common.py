"""What the four delegation-token APIs (KIP-48) answer: eosbroker has no delegation tokens (its
SCRAM refuses the tokenauth extension), as Kafka with delegation.token.secret.key unset, its
default. As Kafka 4.x's KafkaApis: a request on a PLAINTEXT channel, an SSL channel without a client
certificate (User:ANONYMOUS) or a token-authenticated one gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
any other DELEGATION_TOKEN_AUTH_DISABLED. Kafka's tools print the error's message."""

from __future__ import annotations

import datetime
from typing import Final

from protocol.errors import ErrorCode

from ..handler import RequestContext
from ..principal import ANONYMOUS

__all__ = ("NO_TIMESTAMP", "refusal")

# Kafka's -1 in the (non-nullable) timestamp fields: the instant 1 ms before the epoch.
NO_TIMESTAMP: Final = datetime.datetime.fromtimestamp(-0.001, datetime.UTC)


def refusal(ctx: RequestContext) -> ErrorCode:
    """Kafka's allowTokenRequests, then its answer when token authentication is disabled."""
    session = ctx.session
    if session.security_protocol == "PLAINTEXT" or (
            session.security_protocol == "SSL" and session.principal == ANONYMOUS):
        return ErrorCode.delegation_token_request_not_allowed
    return ErrorCode.delegation_token_auth_disabled
