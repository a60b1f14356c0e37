"""SaslHandshake v0-1.

Behaviour: on a SASL listener (SASL_PLAINTEXT, SASL_SSL) the client names its mechanism; the
answer lists the listener's sasl.enabled.mechanisms, with UNSUPPORTED_SASL_MECHANISM (and the
connection closed, as Kafka closes it) when the mechanism is not among them. v1 is followed by
SaslAuthenticate requests, v0 by raw SASL tokens (broker/connection/). With
connections.max.reauth.ms set, a v1 handshake after authentication starts a re-authentication
(KIP-368) with the same mechanism. On a listener without SASL it answers ILLEGAL_SASL_STATE, as
Kafka does, with one log line naming the peer: the API is advertised on every listener (as Kafka
advertises it), because a client that does not see it in ApiVersions drops the connection without
a word and the broker could not tell the operator why.

Version notes: v1 (KIP-152) wraps the tokens in SaslAuthenticate.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.sasl_handshake import SaslHandshakeRequest

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> object:
    sasl = ctx.sasl
    if sasl is None:
        log.warning("SaslHandshake (mechanism %s) from %s: a SASL client on listener %s (%s), which has no SASL",
                    request.mechanism, ctx.peer, ctx.session.listener_name, ctx.session.security_protocol)
        return ctx.respond({"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []})
    code = sasl.handshake(request.mechanism, ctx.version)
    return ctx.respond({"error_code": code, "mechanisms": list(sasl.config.mechanisms)})


HANDLER = Handler(api_key=ApiKey.SASL_HANDSHAKE, min_version=0, max_version=1, handle=handle)
