"""SASL on a SASL_PLAINTEXT or SASL_SSL listener, in the states of Kafka's SaslServerAuthenticator:

    HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE --...--> COMPLETE
                          --SaslHandshake v1--> AUTHENTICATE        (v0: RAW_TOKEN, unframed tokens)

Before COMPLETE a connection may send only ApiVersions, SaslHandshake and SaslAuthenticate (the
connection closes on anything else), frames are bounded by sasl.server.max.receive.size, and a
failed authentication answers SASL_AUTHENTICATION_FAILED, logs one WARNING with the peer and the
user (never the password; rate-limited per peer address by failure_log), and closes the
connection (FAILED).

connections.max.reauth.ms (KIP-368): when positive, SaslAuthenticate v1+ tells the client its session
lifetime; the client re-authenticates on the same connection (SaslHandshake and SaslAuthenticate
again, same mechanism, same principal) before it ends, and a connection whose session has expired
is closed at its next request, as Kafka does. An OAUTHBEARER session also ends when its token
expires (the lifetime is the smaller of the two), with or without connections.max.reauth.ms.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, auto
from typing import TYPE_CHECKING, Any, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import ScramCredential

from ..config import ConfigError
from ..principal import USER_TYPE, KafkaPrincipal
from .failure_log import failure_log
from .jaas import JaasError, parse_jaas_config
from .plain import PLAIN_LOGIN_MODULE, PlainServer, plain_users
from .sasl_errors import AuthenticationFailed
from .scram import MECHANISMS, ScramServer
from .settings import ListenerSettings

if TYPE_CHECKING:  # PyJWT and cryptography load only with an OAUTHBEARER listener (~0.3 s of a start)
    from .oauthbearer import OAuthSettings

__all__ = ("SaslAuthenticator", "SaslServerConfig", "SaslState", "sasl_server_config")

SUPPORTED: Final = ("PLAIN", *MECHANISMS, "OAUTHBEARER")


class SaslState(Enum):
    HANDSHAKE_OR_VERSIONS = auto()
    HANDSHAKE = auto()
    AUTHENTICATE = auto()
    RAW_TOKEN = auto()  # after SaslHandshake v0: tokens come without Kafka headers
    COMPLETE = auto()
    FAILED = auto()


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslServerConfig:
    listener: str
    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str]
    scram_lookup: Callable[[str, str], ScramCredential | None]
    max_receive_size: int
    reauth_ms: int
    oauth: OAuthSettings | None = None


def sasl_server_config(settings: ListenerSettings, scram_lookup: Callable[[str, str], ScramCredential | None],
                       ) -> SaslServerConfig:
    enabled: str = settings.get("sasl.enabled.mechanisms")
    mechanisms = tuple(m.strip().upper() for m in enabled.split(",") if m.strip())
    unsupported = [m for m in mechanisms if m not in SUPPORTED]
    if unsupported or not mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms={enabled}: {', '.join(unsupported) or 'none'} cannot be served "
                          f"(Kafka's default is GSSAPI); eosbroker offers {', '.join(SUPPORTED)}")
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        key, raw = settings.jaas_config("PLAIN")
        if raw is None:
            raise ConfigError(f"{key} is not set: PLAIN needs its users, as in {PLAIN_LOGIN_MODULE} required "
                              'user_alice="alice-secret";')
        try:
            entries = parse_jaas_config(raw)
        except JaasError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        if not any(e.login_module == PLAIN_LOGIN_MODULE for e in entries):
            raise ConfigError(f"{key} has no {PLAIN_LOGIN_MODULE} entry")
        users = plain_users(entries)
    oauth = None
    if "OAUTHBEARER" in mechanisms:
        from .oauthbearer import oauth_validator

        oauth = oauth_validator(settings)
    return SaslServerConfig(listener=settings.listener.name, mechanisms=mechanisms, plain_users=users,
                            scram_lookup=scram_lookup, max_receive_size=settings.get("sasl.server.max.receive.size"),
                            reauth_ms=settings.get("connections.max.reauth.ms"), oauth=oauth)


class SaslAuthenticator:
    """One connection's SASL state; SaslHandshake's and SaslAuthenticate's handlers drive it."""

    def __init__(self, config: SaslServerConfig, peer: str) -> None:
        self.config = config
        self.peer = peer
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self.principal: KafkaPrincipal | None = None
        self.session_expires: float | None = None  # monotonic seconds: connections.max.reauth.ms, token expiry
        self._lifetime_ms = 0
        # Dynamic: the server of the mechanism negotiated (PLAIN, SCRAM, OAUTHBEARER, GSSAPI).
        self._server: Any = None
        self._mechanism: str | None = None

    @property
    def reauthenticating(self) -> bool:
        return self.principal is not None

    def allows(self, api_key: int) -> bool:
        """Whether a request of this API may come now (before authentication completes)."""
        if self.state is SaslState.AUTHENTICATE:
            return api_key == ApiKey.SASL_AUTHENTICATE
        if self.state in (SaslState.HANDSHAKE_OR_VERSIONS, SaslState.HANDSHAKE):
            return api_key in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE)
        return self.state is SaslState.COMPLETE

    def versions_sent(self) -> None:
        if self.state is SaslState.HANDSHAKE_OR_VERSIONS:
            self.state = SaslState.HANDSHAKE

    def handshake(self, mechanism: str, version: int) -> ErrorCode:
        if self.state is SaslState.COMPLETE and self.session_expires is not None and version >= 1:
            if mechanism != self._mechanism:
                self._failed(f"SaslHandshake with mechanism {mechanism} during re-authentication with "
                             f"{self._mechanism}", self.principal.name if self.principal else None)
                return ErrorCode.unsupported_sasl_mechanism
        elif self.state not in (SaslState.HANDSHAKE_OR_VERSIONS, SaslState.HANDSHAKE):
            self._failed(f"SaslHandshake in state {self.state.name}", None)
            return ErrorCode.illegal_sasl_state
        if mechanism not in self.config.mechanisms:
            self._failed(f"mechanism {mechanism!r} is not enabled (enabled: {', '.join(self.config.mechanisms)})", None)
            return ErrorCode.unsupported_sasl_mechanism
        self._mechanism = mechanism
        self._server = self._new_server(mechanism)
        self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.RAW_TOKEN
        return ErrorCode.none

    # Dynamic: the mechanism's own server class.
    def _new_server(self, mechanism: str) -> Any:
        if mechanism == "PLAIN":
            return PlainServer(self.config.plain_users)
        if mechanism == "OAUTHBEARER" and self.config.oauth is not None:
            from .oauthbearer import OAuthBearerServer

            return OAuthBearerServer(self.config.oauth.validator)
        return ScramServer(MECHANISMS[mechanism], self.config.scram_lookup)

    def authenticate(self, token: bytes) -> bytes:
        """The server's answer to one client token; AuthenticationFailed (logged) when it fails."""
        if self.state not in (SaslState.AUTHENTICATE, SaslState.RAW_TOKEN):
            self._failed(f"SaslAuthenticate in state {self.state.name}", None)
            raise AuthenticationFailed("Unexpected SaslAuthenticate request: no SaslHandshake before it")
        try:
            answer: bytes = self._server.evaluate(token)
        except AuthenticationFailed as exc:
            if exc.logged:
                self.state = SaslState.FAILED
            else:
                self._failed(exc.detail, exc.user)
            raise
        if getattr(self._server, "failure", None):  # OAUTHBEARER's refused token: logged now, failed on \x01
            self._warn(self._server.failure, None, self._server.failure_kind)
        if self._server.complete:
            self._complete(self._server.authorization_id, getattr(self._server, "expires_ms", None))
        return answer

    def _complete(self, user: str, expires_ms: int | None) -> None:
        principal = KafkaPrincipal(USER_TYPE, user)
        if self.principal is not None and principal != self.principal:
            message = (f"Cannot change principals during re-authentication from {self.principal}: {principal}")
            self._failed(message, user)
            raise AuthenticationFailed(message, user=user)
        self.principal, self.state, self._server = principal, SaslState.COMPLETE, None
        # Kafka's ReauthInfo: the credential's remaining lifetime, bounded by connections.max.reauth.ms.
        lifetimes = [self.config.reauth_ms] if self.config.reauth_ms > 0 else []
        if expires_ms is not None:
            lifetimes.append(max(0, expires_ms - int(time.time() * 1000)))
        self._lifetime_ms = min(lifetimes, default=0)
        self.session_expires = time.monotonic() + self._lifetime_ms / 1000 if lifetimes else None

    @property
    def session_lifetime_ms(self) -> int:
        return self._lifetime_ms if self.state is SaslState.COMPLETE else 0

    def _failed(self, detail: str, user: str | None) -> None:
        self._warn(detail, user)
        self.state = SaslState.FAILED

    def _warn(self, detail: str, user: str | None, kind: str = "") -> None:
        what = "re-authentication" if self.reauthenticating else "authentication"
        mechanism = self._mechanism or "no mechanism"
        # Rate-limited per address and (listener, mechanism[, kind of refused token]): not per user,
        # which a client may vary.
        failure_log.warning(self.peer.rpartition(":")[0],
                            f"SASL on listener {self.config.listener} ({mechanism}){kind}",
                            "SASL %s of %s from %s on listener %s failed (%s): %s", what,
                            f"user {user!r}" if user is not None else "a client", self.peer, self.config.listener,
                            mechanism, detail)
