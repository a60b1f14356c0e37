"""What an inter-broker connection does before its first request, as Kafka's NetworkClient and
SaslClientAuthenticator do: ApiVersions (the peer's version ranges, checked before each request),
then on a SASL listener SaslHandshake v1 and SaslAuthenticate v2 with this broker's own
credentials (PLAIN: one token; SCRAM: two, and the server's signature checked; OAUTHBEARER: the
broker's token from its identity provider, and on a refusal RFC 7628's \x01 for the reason).

A login that fails (wrong password, a mechanism the peer does not enable, a certificate the
trust store refuses) is a misconfiguration, not a passing fault: it is logged as an ERROR that
names the peer, the listener and why (at most once a minute per peer), and the request fails as a
broken connection would, so its caller retries and succeeds once the configuration is fixed.

Typing: the SASL requests and answers are kio entities of the version negotiated (dynamically typed).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from storage.api import BrokerEndpoint

from .security.inter_broker_auth import InterBrokerSecurity
from .security.sasl_errors import AuthenticationFailed, TokenFetchFailed
from .security.scram import MECHANISMS
from .security.scram_client import ScramClient

if TYPE_CHECKING:
    from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse

__all__ = ("Exchange", "Login", "LoginFailed", "LoginFailureLog", "log_in", "read_frame")

log = logging.getLogger("broker.inter_broker")
_SIZE: Final = struct.Struct(">i")
_MAX_RESPONSE: Final = 100 * 1024 * 1024
_SOFTWARE: Final = ("eosbroker", "1.0")
_REPORT_EVERY_S: Final = 60.0


class LoginFailed(Exception):
    """This broker could not log in to a peer (a configuration problem on one side or the other)."""


@dataclass(frozen=True, slots=True)
class Login:
    versions: dict[int, tuple[int, int]]
    session_lifetime_ms: int = 0  # > 0: the peer ends the session then (connections.max.reauth.ms)


async def read_frame(reader: asyncio.StreamReader, node_id: int) -> bytes:
    (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
    if not 4 <= size <= _MAX_RESPONSE:
        raise ConnectionError(f"broker {node_id} sent a frame of {size} bytes")
    return await reader.readexactly(size)


class Exchange:
    """One request, then its answer, before the connection's reader task takes over."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ids: itertools.count[int],
                 client_id: str) -> None:
        self.reader, self.writer, self.ids, self.client_id = reader, writer, ids, client_id

    async def __call__(self, request: Any, node_id: int) -> Any:
        correlation_id = next(self.ids)
        self.writer.write(encode_request(request, correlation_id, self.client_id))
        answered, body = decode_response(await read_frame(self.reader, node_id), int(request.__api_key__),
                                         int(request.__version__))
        if answered != correlation_id:
            raise ConnectionError(f"broker {node_id} answered correlation id {answered}, not {correlation_id}")
        return body


async def log_in(exchange: Exchange, security: InterBrokerSecurity | None, node_id: int) -> Login:
    versions = await exchange(ApiVersionsRequest(client_software_name=_SOFTWARE[0],
                                                 client_software_version=_SOFTWARE[1]), node_id)
    if versions.error_code is not ErrorCode.none:
        raise LoginFailed(f"ApiVersions answered {versions.error_code.name.upper()}")
    ranges = {int(v.api_key): (int(v.min_version), int(v.max_version)) for v in versions.api_keys}
    if security is None or security.sasl_mechanism is None:
        return Login(ranges)
    mechanism = security.sasl_mechanism
    handshake = await exchange(SaslHandshakeRequest(mechanism=mechanism), node_id)
    if handshake.error_code is not ErrorCode.none:
        raise LoginFailed(f"SaslHandshake answered {handshake.error_code.name.upper()}: the peer enables "
                          f"{', '.join(handshake.mechanisms) or 'no mechanism'} on this listener, not {mechanism}")
    exchange_for = {"PLAIN": _plain, "OAUTHBEARER": _oauthbearer}.get(mechanism, _scram)
    try:
        lifetime = await exchange_for(exchange, security, node_id)
    except (AuthenticationFailed, TokenFetchFailed) as exc:
        why = exc.client_message if isinstance(exc, AuthenticationFailed) else str(exc)
        raise LoginFailed(f"SASL/{mechanism} as {security.username!r}: {why}") from None
    return Login(ranges, lifetime)


async def _authenticate(exchange: Exchange, token: bytes, node_id: int) -> SaslAuthenticateResponse:
    answer: SaslAuthenticateResponse = await exchange(SaslAuthenticateRequest(auth_bytes=token), node_id)
    if answer.error_code is not ErrorCode.none:
        raise AuthenticationFailed(f"{answer.error_code.name.upper()}: {answer.error_message or 'no reason given'}")
    return answer


def _lifetime_ms(answer: SaslAuthenticateResponse) -> int:
    return int(answer.session_lifetime.total_seconds() * 1000)


async def _plain(exchange: Exchange, security: InterBrokerSecurity, node_id: int) -> int:
    token = b"\0" + security.username.encode() + b"\0" + security.password.encode()
    return _lifetime_ms(await _authenticate(exchange, token, node_id))


async def _oauthbearer(exchange: Exchange, security: InterBrokerSecurity, node_id: int) -> int:
    assert security.oauth is not None
    token = await security.oauth.token()
    answer = await _authenticate(exchange, f"n,,\x01auth=Bearer {token}\x01\x01".encode(), node_id)
    if answer.auth_bytes:  # the server's JSON error: acknowledged, and the failure that follows says why
        await _authenticate(exchange, b"\x01", node_id)
        raise AuthenticationFailed(f"the peer refused the token: {answer.auth_bytes.decode(errors='replace')}")
    return _lifetime_ms(answer)


async def _scram(exchange: Exchange, security: InterBrokerSecurity, node_id: int) -> int:
    assert security.sasl_mechanism is not None
    client = ScramClient(MECHANISMS[security.sasl_mechanism], security.username, security.password)
    first = await _authenticate(exchange, client.first_message(), node_id)
    final = await _authenticate(exchange, client.final_message(first.auth_bytes), node_id)
    client.check_server_final(final.auth_bytes)
    return _lifetime_ms(final)


class LoginFailureLog:
    """One ERROR per peer and minute: the marker writer retries much more often than that."""

    def __init__(self) -> None:
        self._last: dict[int, float] = {}

    def report(self, node_id: int, endpoint: BrokerEndpoint, security: InterBrokerSecurity | None,
               why: BaseException) -> None:
        now = time.monotonic()
        if now - self._last.get(node_id, -_REPORT_EVERY_S) < _REPORT_EVERY_S:
            return
        self._last[node_id] = now
        listener = (f"listener {security.listener_name} ({security.security_protocol})" if security is not None
                    else "PLAINTEXT")
        log.error("cannot log in to broker %d at %s:%d on %s: %s; requests to it (transaction markers) are "
                  "retried until this is fixed", node_id, endpoint.host, endpoint.port, listener, why)
