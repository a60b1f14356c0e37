"""The authentication gate of one connection: who the peer is, and which of its requests may pass.

An SSL listener's client is its certificate's subject (ssl.principal.mapping.rules). On a SASL
listener the SASL state (broker/security/sasl.py, driven by the SaslHandshake and SaslAuthenticate
handlers) lets only ApiVersions and the SASL requests through until it is COMPLETE, and once a
session has a lifetime (connections.max.reauth.ms, or an OAUTHBEARER token's expiry: KIP-368) a
request after it ends closes the connection unless the client re-authenticated. Sans-I/O: the gate
answers with a reason to close or a step, and the connection acts on it.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
import time
from collections.abc import Callable
from typing import Final

from protocol.api_keys import ApiKey

from ..principal import ANONYMOUS, Session, canonical_host
from ..security.listener_security import ListenerSecurity
from ..security.sasl import SaslAuthenticator, SaslState
from ..security.sasl_errors import AuthenticationFailed
from ..security.ssl_principal import NoMatchingRule, peer_principal

__all__ = ("AuthGate", "Step", "api_key_of")

_SIZE: Final = struct.Struct(">i")
_API_KEY: Final = struct.Struct(">h")


class Step(enum.Enum):
    """What a request did to the SASL state."""

    NONE = enum.auto()
    FAILED = enum.auto()  # answer, then close (connection.failed.authentication.delay.ms)
    AUTHENTICATED = enum.auto()  # a new principal: the connection lifts sasl.server.max.receive.size


def api_key_of(frame: bytes | memoryview) -> int:
    """The API key that leads every request header: checked before the request is parsed, as Kafka does."""
    return int(_API_KEY.unpack_from(frame)[0]) if len(frame) >= 2 else -1


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


class AuthGate:
    def __init__(self, security: ListenerSecurity, clock: Callable[[], float] = time.monotonic) -> None:
        listener = security.listener
        self._security = security
        self._clock = clock  # the SASL session's expiry is in time.monotonic's seconds
        self.session = Session(principal=ANONYMOUS, listener_name=listener.name,
                               security_protocol=listener.security_protocol, client_host="")
        self.sasl = SaslAuthenticator(security.sasl, "?") if security.sasl is not None else None
        # Whether requests must come through check(): PLAINTEXT and SSL connections, and SASL ones
        # once authenticated without a session lifetime, never do.
        self.watching = self.sasl is not None

    def connected(self, peer: str, host: str | None) -> None:
        if host is not None:
            self.session = dataclasses.replace(self.session, client_host=canonical_host(host))
        if self.sasl is not None:
            self.sasl.peer = peer

    def tls_principal(self, ssl_object: object) -> str | None:
        """Take the client certificate's principal; the reason to close when no rule maps it."""
        mapper = self._security.principal_mapper
        if mapper is None:
            return None
        try:
            principal = peer_principal(ssl_object, mapper)
        except NoMatchingRule as exc:
            return f"ssl.principal.mapping.rules: {exc}"
        self.session = dataclasses.replace(self.session, principal=principal)
        return None

    @property
    def expects_raw_token(self) -> bool:
        """After SaslHandshake v0 the next frame is a bare SASL token, not a request."""
        return self.sasl is not None and self.sasl.state is SaslState.RAW_TOKEN

    def refusal(self, api_key: int) -> str | None:
        """Why a request of this API may not come now (the connection closes), or None."""
        sasl = self.sasl
        if sasl is None:
            return None
        if sasl.state is SaslState.COMPLETE and api_key != ApiKey.SASL_HANDSHAKE:
            if sasl.session_expires is not None and self._clock() >= sasl.session_expires:
                return (f"{_api_name(api_key)} request after the SASL session of {sasl.principal} expired "
                        f"(its lifetime was {sasl.session_lifetime_ms} ms: connections.max.reauth.ms="
                        f"{sasl.config.reauth_ms}, or its token's expiry) without re-authentication")
            return None
        if not sasl.allows(api_key):
            return (f"{_api_name(api_key)} request on SASL listener {self.session.listener_name} before "
                    f"authentication (state {sasl.state.name}); a client must send SaslHandshake first")
        return None

    def handled(self, api_key: int) -> Step:
        """After a request passed and was handled."""
        if api_key == ApiKey.API_VERSIONS and self.sasl is not None:
            self.sasl.versions_sent()
        return self.step()

    def raw_token(self, frame: bytes | memoryview) -> bytes | None:
        """The framed answer to a raw token (SaslHandshake v0), None when authentication failed:
        v0 has no way to say why."""
        assert self.sasl is not None
        try:
            answer = self.sasl.authenticate(bytes(frame))
        except AuthenticationFailed:
            return None
        return _SIZE.pack(len(answer)) + answer

    def step(self) -> Step:
        sasl = self.sasl
        if sasl is None:
            return Step.NONE
        if sasl.state is SaslState.FAILED:
            return Step.FAILED
        if sasl.state is not SaslState.COMPLETE or sasl.principal is None:
            return Step.NONE
        if sasl.session_expires is None:
            self.watching = False
        if sasl.principal == self.session.principal:
            return Step.NONE
        self.session = dataclasses.replace(self.session, principal=sasl.principal)
        return Step.AUTHENTICATED
