"""SaslHandshake v0-1.

Behaviour: eosbroker's listeners are all PLAINTEXT, so a SaslHandshake means a client configured
for SASL_PLAINTEXT (or SASL_SSL without the TLS) reached a listener without SASL. Kafka answers
ILLEGAL_SASL_STATE on such a listener; so does eosbroker, with one log line naming the peer and
the mechanism, and the client then gives up on the connection. The API is advertised (as Kafka
advertises it on every listener) because a client that does not see it in ApiVersions drops the
connection silently, and the broker could not tell the operator why.
"""

from __future__ import annotations

import logging
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: Any) -> Any:
    log.warning("SaslHandshake (mechanism %s) from %s: a SASL client on a PLAINTEXT listener; "
                "SASL is not enabled on this broker", request.mechanism, ctx.peer)
    return ctx.respond({"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []})


HANDLER = Handler(api_key=ApiKey.SASL_HANDSHAKE, min_version=0, max_version=1, handle=handle)
