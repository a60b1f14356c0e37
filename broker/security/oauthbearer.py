"""SASL/OAUTHBEARER (RFC 7628, KIP-255, KIP-768) as Kafka's OAuthBearerSaslServer runs it.

The client's first message is `n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01...]\\x01`.
A valid token completes at once with an empty answer; the principal is User:<sub> and the session
ends at the token's expiry (sasl.py bounds it with connections.max.reauth.ms). An invalid token is
answered, as RFC 7628 says, with a JSON error and no failure yet; the client then sends a single
\\x01 and only that gets SASL_AUTHENTICATION_FAILED, after which the connection closes.

Which validator a listener uses follows Kafka: with
`listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` naming
OAuthBearerValidatorCallbackHandler, signed tokens checked against the JWKS; without it, Kafka's
unsecured validator, which trusts unsigned tokens anyone can make (development only).
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

from ..config import PROPERTY_FIELDS, BrokerConfig, ConfigError
from ..listeners import Listener
from .jaas import JaasError, parse_jaas_config
from .jwks import JwksCache
from .oauth_tokens import BrokerJwtValidator, InvalidToken, UnsecuredJwtValidator, ValidToken
from .sasl_errors import AuthenticationFailed
from .settings import ListenerSettings
from .tls import client_context

__all__ = ("OAUTHBEARER_LOGIN_MODULE", "ClientFirst", "OAuthBearerServer", "jaas_ssl_context", "oauth_validator",
           "parse_client_first")

log = logging.getLogger("broker.security")

OAUTHBEARER_LOGIN_MODULE: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
VALIDATOR_HANDLERS: Final = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                             # the name before Kafka 3.4, still accepted by Kafka 4
                             "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler")
_SEP: Final = "\x01"
_SASLNAME: Final = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS: Final = rf"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+{_SEP})*"
_CLIENT_FIRST: Final = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEP}(?P<kvpairs>{_KVPAIRS}){_SEP}", re.DOTALL)
_AUTH: Final = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_INVALID_TOKEN: Final = '{"status":"invalid_token"}'
_DETAIL: Final = re.compile(r"[\"{(\d]")


class TokenValidator(Protocol):
    def validate(self, token: str) -> ValidToken: ...


@dataclass(frozen=True, slots=True)
class ClientFirst:
    authorization_id: str
    token: str = field(repr=False)
    extensions: dict[str, str]


def parse_client_first(message: bytes) -> ClientFirst:
    """The client's first message (OAuthBearerClientInitialResponse); ValueError with Kafka's text."""
    text = message.decode("utf-8", "replace")
    match = _CLIENT_FIRST.fullmatch(text)
    if match is None:
        raise ValueError("Invalid OAUTHBEARER client first message")
    pairs = dict(pair.partition("=")[::2] for pair in match["kvpairs"].split(_SEP) if pair)
    auth = pairs.pop("auth", None)
    if auth is None:
        raise ValueError("Invalid OAUTHBEARER client first message: 'auth' not specified")
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise ValueError("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if auth_match["scheme"].lower() != "bearer":
        raise ValueError(f"Invalid scheme in OAUTHBEARER client first message: {auth_match['scheme']}")
    authzid = (match["authzid"] or "").replace("=2C", ",").replace("=3D", "=")
    return ClientFirst(authorization_id=authzid, token=auth_match["token"], extensions=pairs)


class OAuthBearerServer:
    """One exchange on one connection (a new one for each re-authentication)."""

    mechanism = "OAUTHBEARER"

    def __init__(self, validator: TokenValidator) -> None:
        self._validator = validator
        self._refused: str | None = None  # why the token was refused, until the client's \x01
        self.failure: str | None = None  # set by evaluate for the authenticator to log once
        self.authorization_id: str | None = None
        self.expires_ms: int | None = None
        self.complete = False

    @property
    def failure_kind(self) -> str:
        """The failure's reason up to its first detail (a quote, brace, parenthesis or digit), so
        that each kind of refused token gets its own rate-limited WARNING, whatever its details."""
        return ": " + _DETAIL.split(self.failure or "", maxsplit=1)[0].strip()[:80]

    def evaluate(self, response: bytes) -> bytes:
        if response == _SEP.encode() and self._refused is not None:
            raise AuthenticationFailed(f"{_INVALID_TOKEN} ({self._refused})", self._refused, logged=True)
        self._refused = self.failure = None
        try:
            first = parse_client_first(response)
        except ValueError as exc:
            raise AuthenticationFailed("Authentication failed during authentication due to invalid credentials "
                                       "with SASL mechanism OAUTHBEARER", str(exc)) from None
        try:
            token = self._validator.validate(first.token)
        except InvalidToken as exc:
            self._refused = self.failure = str(exc)
            return _INVALID_TOKEN.encode()
        if first.authorization_id and first.authorization_id != token.principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({first.authorization_id}) that is "
                f"different from the token's principal name ({token.principal})", user=token.principal)
        self.authorization_id, self.expires_ms, self.complete = token.principal, token.expires_ms, True
        return b""


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    validator: TokenValidator
    jwks: JwksCache | None  # the keys to fetch before serving and refresh (signed tokens only)


def oauth_validator(settings: ListenerSettings) -> OAuthSettings:
    """The listener's validator from its settings; ConfigError with the key at fault."""
    jaas_key, raw = settings.jaas_config("OAUTHBEARER")
    if raw is None:
        raise ConfigError(f"{jaas_key} is not set: OAUTHBEARER needs it, as in {OAUTHBEARER_LOGIN_MODULE} required ;")
    try:
        entries = [e for e in parse_jaas_config(raw) if e.login_module == OAUTHBEARER_LOGIN_MODULE]
    except JaasError as exc:
        raise ConfigError(f"{jaas_key}: {exc}") from None
    if not entries:
        raise ConfigError(f"{jaas_key} has no {OAUTHBEARER_LOGIN_MODULE} entry")
    handler_key = f"{settings.prefix}oauthbearer.sasl.server.callback.handler.class"
    handler = settings.config.listener_overrides.get(handler_key)
    if handler is None:
        log.warning("listener %s: SASL/OAUTHBEARER with Kafka's unsecured validator (no %s): unsigned tokens that "
                    "anyone can make are accepted; for development only", settings.listener.name, handler_key)
        try:
            return OAuthSettings(UnsecuredJwtValidator(entries[0].options), None)
        except ValueError as exc:
            raise ConfigError(f"{jaas_key}: {exc}") from None
    if handler.strip() not in VALIDATOR_HANDLERS:
        raise ConfigError(f"Invalid value {handler} for configuration {handler_key}: eosbroker serves "
                          f"OAUTHBEARER with {VALIDATOR_HANDLERS[0]} or, without this key, the unsecured validator")
    return _signed(settings, entries[0].options)


class _JaasSsl:
    """The ssl.* options of a JAAS config read as a listener's settings are: Kafka's
    JaasOptionsUtils.getSslClientConfig, with ConfigDef's client SSL defaults (not the broker's)."""

    def __init__(self, listener: Listener, options: Mapping[str, str]) -> None:
        self.listener, self._options = listener, options

    # Dynamic: an option's value, of its key's type (as ListenerSettings.get).
    def get(self, key: str) -> Any:
        field_ = BrokerConfig.__dataclass_fields__[PROPERTY_FIELDS[key]]
        raw = self._options.get(key)
        return field_.default if raw is None else field_.metadata["kafka"].parse(key, raw)


def jaas_ssl_context(settings: ListenerSettings, options: Mapping[str, str], url: str) -> ssl.SSLContext | None:
    """How to trust an https JWKS or token endpoint: the JAAS config's ssl.truststore.* options
    (ssl.endpoint.identification.algorithm too), else the system's CAs. None for http."""
    if not url.lower().startswith("https:"):
        return None
    return client_context(cast(ListenerSettings, _JaasSsl(settings.listener, options)),
                          f"listener {settings.listener.name}: the TLS settings for {url}")


def _signed(settings: ListenerSettings, jaas_options: Mapping[str, str]) -> OAuthSettings:
    def get(key: str) -> object:
        return settings.mechanism_get("OAUTHBEARER", f"sasl.oauthbearer.{key}")

    def get_int(key: str) -> int:
        value = get(key)
        if not isinstance(value, int | str):
            raise ConfigError(f"sasl.oauthbearer.{key} must be an integer, not {value!r}")
        return int(value)

    url = get("jwks.endpoint.url")
    if not url:
        raise ConfigError("sasl.oauthbearer.jwks.endpoint.url is required with OAuthBearerValidatorCallbackHandler "
                          "(https://..., or file:... for a JWKS file)")
    audiences = tuple(a.strip() for a in str(get("expected.audience")).split(",") if a.strip())
    issuer = get("expected.issuer")
    for what, missing, allowed in (("audience", not audiences, get("allow.unverified.audience")),
                                   ("issuer", not issuer, get("allow.unverified.issuer"))):
        if missing and not allowed:
            raise ConfigError(f"sasl.oauthbearer.expected.{what} must be set when a JWKS endpoint is configured, so "
                              f"that the token's {what} is verified; set sasl.oauthbearer.allow.unverified.{what}=true "
                              f"to accept tokens of any {what}")
        if missing:
            log.warning("listener %s: SASL/OAUTHBEARER accepts tokens of any %s (sasl.oauthbearer.allow.unverified."
                        "%s=true)", settings.listener.name, what, what)
    jwks = JwksCache(str(url), get_int("jwks.endpoint.refresh.ms"), get_int("jwks.endpoint.retry.backoff.ms"),
                     get_int("jwks.endpoint.retry.backoff.max.ms"),
                     ssl_context=jaas_ssl_context(settings, jaas_options, str(url)))
    validator = BrokerJwtValidator(jwks, audiences=audiences, issuer=str(issuer) if issuer else None,
                                   clock_skew_s=get_int("clock.skew.seconds"), sub_claim=str(get("sub.claim.name")),
                                   scope_claim=str(get("scope.claim.name")))
    return OAuthSettings(validator, jwks)
