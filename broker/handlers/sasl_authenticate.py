"""SaslAuthenticate v0-2.

Behaviour: carries one SASL token each way for the mechanism chosen by SaslHandshake v1 (PLAIN:
one round; SCRAM: two, the second answer holding the server signature the client checks). A
failure answers SASL_AUTHENTICATION_FAILED with Kafka's message, which never says whether the
user exists, and the connection closes after the answer; the broker's log has the peer, the user
and why. On a listener without SASL, or without a handshake first, it answers ILLEGAL_SASL_STATE.

Version notes: v1 (KIP-368) adds session_lifetime_ms: connections.max.reauth.ms when set, else 0
(no re-authentication needed). v2 is the flexible version.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext
from ..security.sasl_errors import AuthenticationFailed

if TYPE_CHECKING:
    from protocol.request_types.sasl_authenticate import SaslAuthenticateRequest


def _answer(ctx: RequestContext, code: ErrorCode, message: str | None, token: bytes, lifetime_ms: int) -> object:
    return ctx.respond({"error_code": code, "error_message": message, "auth_bytes": token,
                        "session_lifetime": datetime.timedelta(milliseconds=lifetime_ms)})


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> object:
    sasl = ctx.sasl
    if sasl is None:
        return _answer(ctx, ErrorCode.illegal_sasl_state, f"listener {ctx.session.listener_name} has no SASL",
                       b"", 0)
    try:
        token = sasl.authenticate(request.auth_bytes)
    except AuthenticationFailed as exc:
        return _answer(ctx, ErrorCode.sasl_authentication_failed, exc.client_message, b"", 0)
    return _answer(ctx, ErrorCode.none, None, token, sasl.session_lifetime_ms)


HANDLER = Handler(api_key=ApiKey.SASL_AUTHENTICATE, min_version=0, max_version=2, handle=handle)
