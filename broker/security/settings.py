"""A listener's security settings as Kafka reads them: `listener.name.<listener>.<key>` wins over
`<key>`, and SASL settings may be set per mechanism as `listener.name.<listener>.<mechanism>.<key>`
(Kafka's ListenerName.configPrefix and saslMechanismPrefix). Overrides are checked with the
validator of the key they override, so a bad value is refused at start-up with Kafka's message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..config import LISTENER_PREFIX, PROPERTY_FIELDS, BrokerConfig, ConfigError, Spec
from ..listeners import Listener

__all__ = ("ListenerSettings", "check_overrides")

_SASL_MECHANISMS: Final = ("plain", "scram-sha-256", "scram-sha-512", "gssapi", "oauthbearer")


def _spec(key: str) -> Spec | None:
    name = PROPERTY_FIELDS.get(key)
    if name is None:
        return None
    spec: Spec | None = BrokerConfig.__dataclass_fields__[name].metadata.get("kafka")
    return spec


def _base_key(rest: str) -> str:
    """The key a listener override sets: `ssl.client.auth`, or `sasl.jaas.config` of
    `plain.sasl.jaas.config`."""
    mechanism, _, key = rest.partition(".")
    return key if mechanism in _SASL_MECHANISMS and key.startswith("sasl.") else rest


def check_overrides(config: BrokerConfig) -> list[str]:
    """Validate every listener.name.* value; returns the keys that name no listener or no known
    property (the broker warns about them, as about any unknown key)."""
    names = {listener.name.lower() for listener in config.client_listeners}
    unknown = []
    for key, raw in config.listener_overrides.items():
        listener, _, rest = key[len(LISTENER_PREFIX):].partition(".")
        spec = _spec(_base_key(rest))
        if listener not in names or spec is None:
            unknown.append(key)
            continue
        spec.parse(key, raw)  # raises ConfigError with Kafka's wording
    return unknown


class ListenerSettings:
    """The effective security settings of one listener."""

    def __init__(self, config: BrokerConfig, listener: Listener) -> None:
        self.config = config
        self.listener = listener
        self._prefix = f"{LISTENER_PREFIX}{listener.name.lower()}."

    @property
    def prefix(self) -> str:
        return self._prefix

    def overridden(self, key: str) -> bool:
        return self._prefix + key in self.config.listener_overrides

    # Dynamic: a property's value, of the type its Spec parses it to.
    def get(self, key: str) -> Any:
        """The value of `key` for this listener."""
        overrides: Mapping[str, str] = self.config.listener_overrides
        if (raw := overrides.get(self._prefix + key)) is not None:
            spec = _spec(key)
            if spec is None:
                raise ConfigError(f"{self._prefix + key}: unknown property {key}")
            return spec.parse(self._prefix + key, raw)
        return getattr(self.config, PROPERTY_FIELDS[key])

    # Dynamic: as get.
    def mechanism_get(self, mechanism: str, key: str) -> Any:
        """The value of a SASL `key` for this listener and mechanism: Kafka's saslMechanismPrefix form
        `listener.name.<listener>.<mechanism>.<key>` wins over `listener.name.<listener>.<key>`."""
        scoped = f"{self._prefix}{mechanism.lower()}.{key}"
        if (raw := self.config.listener_overrides.get(scoped)) is not None:
            spec = _spec(key)
            if spec is None:
                raise ConfigError(f"{scoped}: unknown property {key}")
            return spec.parse(scoped, raw)
        return self.get(key)

    def jaas_config(self, mechanism: str) -> tuple[str, str | None]:
        """(key, value) of the mechanism's JAAS config: as in Kafka's JaasContext.loadServerContext,
        only `listener.name.<listener>.<mechanism>.sasl.jaas.config` configures a broker."""
        key = f"{self._prefix}{mechanism.lower()}.sasl.jaas.config"
        return key, self.config.listener_overrides.get(key)
