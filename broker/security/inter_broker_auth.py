"""How this broker reaches and logs in to the other brokers of its cluster, from Kafka's settings
(KafkaConfig.getInterBrokerListenerNameAndSecurityProtocol and its checks):

- the listener: `inter.broker.listener.name`, or the listener named after
  `security.inter.broker.protocol` (default PLAINTEXT); setting both is refused, and the listener
  must be one of this broker's (every broker of a cluster is meant to have it);
- TLS (SSL, SASL_SSL): that listener's ssl.* settings, client side (broker/security/tls.py);
- SASL (SASL_PLAINTEXT, SASL_SSL): `sasl.mechanism.inter.broker.protocol`, which must be among the
  listener's sasl.enabled.mechanisms; PLAIN and SCRAM-SHA-256/512 (Kafka's default, GSSAPI, is
  Kerberos: refused at start-up) with the username and password of the listener's
  `listener.name.<l>.<mechanism>.sasl.jaas.config`, as a Kafka broker logs in; OAUTHBEARER with a
  token this broker gets by client credentials (broker/security/oauth_login.py) from
  `sasl.oauthbearer.token.endpoint.url`.

Checked and built once at start-up, in cluster mode only: a single node has no peers.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ..config import BrokerConfig, ConfigError
from ..listeners import Listener
from ..startup import StartupError
from .jaas import JaasError, parse_jaas_config
from .settings import ListenerSettings
from .tls import client_context

if TYPE_CHECKING:
    from .oauth_login import ClientCredentials

__all__ = ("InterBrokerSecurity", "build_inter_broker_security", "inter_broker_listener")

_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


@dataclass(frozen=True, slots=True, kw_only=True)
class InterBrokerSecurity:
    listener_name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None  # None: no SASL on this listener
    username: str = ""
    password: str = field(default="", repr=False)
    oauth: ClientCredentials | None = None  # OAUTHBEARER: where this broker's token comes from


def inter_broker_listener(config: BrokerConfig) -> Listener:
    """The listener other brokers are reached on; ConfigError with Kafka's wording."""
    named = config.inter_broker_listener_name
    if named is not None and "security.inter.broker.protocol" in config.static_keys:
        raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    name = named.strip().upper() if named is not None else config.security_inter_broker_protocol
    listeners = {listener.name: listener for listener in config.client_listeners}
    if name not in listeners:
        key = "inter.broker.listener.name" if named is not None else "security.inter.broker.protocol"
        raise ConfigError(f"{key} must be a listener name defined in advertised.listeners ({name} is not). The valid "
                          f"options based on currently configured listeners are {','.join(listeners)}")
    return listeners[name]


def build_inter_broker_security(config: BrokerConfig) -> InterBrokerSecurity:
    """StartupError when the inter-broker listener cannot be used as configured."""
    try:
        listener = inter_broker_listener(config)
        protocol = listener.security_protocol
        settings = ListenerSettings(config, listener)
        context = client_context(settings) if protocol in ("SSL", "SASL_SSL") else None
        if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
            return InterBrokerSecurity(listener_name=listener.name, security_protocol=protocol, ssl_context=context)
        mechanism = _mechanism(config, settings)
        if mechanism == "OAUTHBEARER":
            oauth = _client_credentials(settings)
            return InterBrokerSecurity(listener_name=listener.name, security_protocol=protocol, ssl_context=context,
                                       sasl_mechanism=mechanism, username=oauth.client_id, oauth=oauth)
        username, password = _credentials(settings, mechanism)
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    return InterBrokerSecurity(listener_name=listener.name, security_protocol=protocol, ssl_context=context,
                               sasl_mechanism=mechanism, username=username, password=password)


def _mechanism(config: BrokerConfig, settings: ListenerSettings) -> str:
    mechanism = config.sasl_mechanism_inter_broker_protocol.strip().upper()
    if mechanism not in _MECHANISMS:
        raise ConfigError(f"sasl.mechanism.inter.broker.protocol={mechanism}"
                          f"{' (Kafka default, Kerberos)' if mechanism == 'GSSAPI' else ''} is not supported for "
                          f"inter-broker SASL: set it to one of {', '.join(_MECHANISMS)}")
    enabled = [m.strip().upper() for m in settings.get("sasl.enabled.mechanisms").split(",") if m.strip()]
    if mechanism not in enabled:
        raise ConfigError("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when "
                          f"SASL is used for inter-broker communication (listener {settings.listener.name} "
                          f"enables {','.join(enabled)})")
    return mechanism


def _credentials(settings: ListenerSettings, mechanism: str) -> tuple[str, str]:
    key, text = settings.jaas_config(mechanism)
    if text is None:
        raise ConfigError(f"inter-broker SASL/{mechanism} needs this broker's credentials: set {key} with "
                          'username="..." password="..."')
    try:
        options = parse_jaas_config(text)[0].options
    except JaasError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    if "username" not in options or "password" not in options:
        raise ConfigError(f'{key} has no username="..." and password="..." for this broker to log in to the '
                          "others with (inter-broker SASL)")
    return options["username"], options["password"]


def _client_credentials(settings: ListenerSettings) -> ClientCredentials:
    """Kafka 4.1+'s sasl.oauthbearer.client.credentials.* keys, or the older JAAS options."""
    key, text = settings.jaas_config("OAUTHBEARER")
    try:
        options = parse_jaas_config(text)[0].options if text is not None else {}
    except JaasError as exc:
        raise ConfigError(f"{key}: {exc}") from None

    def get(name: str, jaas_option: str) -> str | None:
        value = settings.mechanism_get("OAUTHBEARER", name)
        return str(value) if value else options.get(jaas_option)

    url = get("sasl.oauthbearer.token.endpoint.url", "")
    client_id = get("sasl.oauthbearer.client.credentials.client.id", "clientId")
    secret = get("sasl.oauthbearer.client.credentials.client.secret", "clientSecret")
    if not url or not client_id or not secret:
        raise ConfigError("inter-broker SASL/OAUTHBEARER needs this broker's token: set "
                          "sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.credentials.client.id and "
                          "sasl.oauthbearer.client.credentials.client.secret (or the JAAS options clientId and "
                          f"clientSecret in {key})")
    from .oauth_login import ClientCredentials  # urllib's and PyJWT's imports: only when used
    from .oauthbearer import jaas_ssl_context

    return ClientCredentials(url, client_id, secret, get("sasl.oauthbearer.scope", "scope"),
                             jaas_ssl_context(settings, options, url))
