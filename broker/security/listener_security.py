"""What one listener needs to authenticate its clients, built once at start-up from its settings:
the TLS context (SSL, SASL_SSL), how a client certificate becomes a principal, and the SASL
mechanisms (SASL_PLAINTEXT, SASL_SSL). A misconfiguration is a StartupError naming the listener."""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.api import ScramCredential

from ..config import BrokerConfig, ConfigError
from ..listeners import Listener
from ..startup import StartupError
from .settings import ListenerSettings
from .ssl_principal import SslPrincipalMapper
from .tls import server_context

if TYPE_CHECKING:
    from .jwks import JwksCache
    from .sasl import SaslServerConfig

__all__ = ("ListenerSecurity", "build_listener_security", "fetch_verification_keys")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSecurity:
    listener: Listener
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    sasl: SaslServerConfig | None = None  # on SASL listeners

    @property
    def uses_tls(self) -> bool:
        return self.ssl_context is not None


def build_listener_security(config: BrokerConfig, listener: Listener,
                            scram_lookup: Callable[[str, str], ScramCredential | None]) -> ListenerSecurity:
    protocol = listener.security_protocol
    if protocol == "PLAINTEXT":
        return ListenerSecurity(listener=listener)
    settings = ListenerSettings(config, listener)
    try:
        context = server_context(settings) if protocol in ("SSL", "SASL_SSL") else None
        mapper = _mapper(settings) if protocol == "SSL" else None
        sasl = None
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            from .sasl import sasl_server_config

            sasl = sasl_server_config(settings, scram_lookup)
    except ConfigError as exc:
        raise StartupError(f"listener {listener.name}: {exc}") from None
    return ListenerSecurity(listener=listener, ssl_context=context, principal_mapper=mapper, sasl=sasl)


async def fetch_verification_keys(securities: Iterable[ListenerSecurity]) -> list[JwksCache]:
    """The JWKS of every OAUTHBEARER listener that validates signed tokens, fetched before the
    listeners serve, as Kafka's validator does when it is configured; StartupError when one cannot
    be had. Returns the caches for their refresh tasks."""
    caches = []
    for security in securities:
        oauth = security.sasl.oauth if security.sasl is not None else None
        if oauth is None or oauth.jwks is None:
            continue
        from .jwks import JwksError  # here: PyJWT's import costs every other broker start ~0.1-0.3 s

        try:
            await oauth.jwks.refresh_with_retry()
        except JwksError as exc:
            raise StartupError(f"listener {security.listener.name}: {exc}") from None
        caches.append(oauth.jwks)
    return caches


def _mapper(settings: ListenerSettings) -> SslPrincipalMapper:
    rules = settings.get("ssl.principal.mapping.rules")
    try:
        return SslPrincipalMapper(rules)
    except (ValueError, re.error) as exc:  # a rule's pattern is a regular expression
        raise ConfigError(f"Invalid value {rules} for configuration ssl.principal.mapping.rules: {exc}") from None
