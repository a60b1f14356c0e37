"""The broker's configs as Kafka's DescribeConfigs describes them (ConfigHelper in Kafka's core):
each property's value, its source, and, when asked, its synonyms.

A property given in server.properties or on the command line is STATIC_BROKER_CONFIG; any other
is DEFAULT_CONFIG with Kafka's default (null where Kafka has none, such as log.retention.ms, which
Kafka derives from log.retention.hours). Synonyms follow Kafka's configSynonyms: for the names of a
synonym group (log.retention.ms/.minutes/.hours, log.roll.ms/.hours), first the static entries, then
the non-null defaults, then everything before the described name's own first entry is dropped; the
source of a config is that of its first synonym. Dynamic broker configs (broker/dynamic_config.py)
come first: this broker's (DYNAMIC_BROKER_CONFIG), then the cluster default's
(DYNAMIC_DEFAULT_BROKER_CONFIG). Described as the cluster default (resource ""), a broker lists
only the configs that default sets, as Kafka does. Topic configs add their own override
(DYNAMIC_TOPIC_CONFIG) before the synonyms of the broker property that supplies their default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NotRequired, TypedDict

from storage.api import KAFKA_TOPIC_DEFAULTS, TOPIC_CONFIG_DEFAULTS_FROM_BROKER

from .config import PROPERTY_FIELDS, BrokerConfig
from .dynamic_keys import DYNAMIC_CONFIGS, LIST_CONFIGS, base_name

__all__ = ("ConfigEntry", "ConfigSynonym", "DEFAULT_CONFIG",
           "DYNAMIC_TOPIC_CONFIG", "NO_DYNAMIC", "STATIC_BROKER_CONFIG", "broker_config_entries",
           "broker_synonyms", "kafka_defaults", "property_synonyms", "render", "topic_default_synonyms")

# Kafka's ConfigSource ids (DescribeConfigs v1+)
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
# (this broker's dynamic configs, the cluster default's)
Layers = tuple[Mapping[str, str], Mapping[str, str]]
NO_DYNAMIC: Final[Layers] = ({}, {})


class ConfigSynonym(TypedDict):
    """One DescribeConfigs synonym (v1+)."""

    name: str
    value: str | None
    source: int


class ConfigEntry(TypedDict):
    """One config of a DescribeConfigs result (config_type v3+, documentation when asked)."""

    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    synonyms: list[ConfigSynonym]
    config_type: int
    documentation: NotRequired[str | None]


# Kafka's PASSWORD-typed dynamic configs: a name ending in one is sensitive (isPasswordConfig).
_PASSWORDS: Final = ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                     "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
                     "sasl.jaas.config", "sasl.oauthbearer.client.credentials.client.secret")
# Kafka's ConfigEntry.ConfigType ids (DescribeConfigs v3+), by our Spec kinds
_CONFIG_TYPES: Final = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LONG": 5, "DOUBLE": 6, "PASSWORD": 9}

# DynamicBrokerConfig.brokerConfigSynonyms, for the properties eosbroker has.
SYNONYM_GROUPS: Final = (("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
                         ("log.roll.ms", "log.roll.hours"))
# Kafka's LogConfig synonyms of the topic configs whose broker property eosbroker does not read
# (storage.log_config.TOPIC_CONFIG_DEFAULTS_FROM_BROKER has those it reads).
TOPIC_CONFIG_SYNONYMS: Final[Mapping[str, str]] = {
    "compression.gzip.level": "compression.gzip.level", "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "file.delete.delay.ms": "log.segment.delete.delay.ms", "local.retention.bytes": "log.local.retention.bytes",
    "local.retention.ms": "log.local.retention.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "preallocate": "log.preallocate",
    "segment.index.bytes": "log.index.size.max.bytes",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}
# Kafka's ConfigDef default where BrokerConfig's field default differs: values BrokerConfig derives
# (log.retention.ms, log.roll.ms), and listeners.
_KAFKA_DEFAULTS: Final[Mapping[str, str | None]] = {
    "log.retention.ms": None, "log.roll.ms": None,
    "listeners": "PLAINTEXT://:9092",
}


def render(value: object) -> str | None:
    """ConfigDef.convertToString: booleans in lower case, null stays null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _default_values() -> dict[str, str | None]:
    defaults = BrokerConfig()
    return {key: _KAFKA_DEFAULTS[key] if key in _KAFKA_DEFAULTS else render(getattr(defaults, name))
            for key, name in PROPERTY_FIELDS.items()}


def kafka_defaults() -> dict[str, str | None]:
    """Kafka's default of every property eosbroker has, as DescribeConfigs renders it, and of the
    broker configs behind topic defaults it has no property for (log.cleanup.policy: delete)."""
    topic_backed = {broker: KAFKA_TOPIC_DEFAULTS.get(topic)
                    for topic, broker in TOPIC_CONFIG_DEFAULTS_FROM_BROKER.items()}
    return {**topic_backed, **_default_values()}


def _spec_kind(key: str) -> str | None:
    field = PROPERTY_FIELDS.get(key)
    spec = BrokerConfig.__dataclass_fields__[field].metadata.get("kafka") if field else None
    return spec.kind if spec is not None else None


def _sensitive(key: str) -> bool:
    return _spec_kind(key) == "PASSWORD" or key.endswith(_PASSWORDS)


def _static_values(config: BrokerConfig) -> dict[str, str | None]:
    # A password's value is never described (Kafka answers null and is_sensitive).
    out = {key: None if _sensitive(key) else render(getattr(config, PROPERTY_FIELDS[key]))
           for key in config.static_keys}
    if "listeners" in out and config.listeners is None:  # set by --host/--port
        out["listeners"] = ",".join(f"{li.name}://{li.host}:{li.port}" for li in config.client_listeners)
    if "advertised.listeners" in out and config.advertised_listeners is None:
        out["advertised.listeners"] = ",".join(f"{li.name}://{li.advertised[0]}:{li.advertised[1]}"
                                               for li in config.client_listeners)
    return out


def broker_synonyms(name: str, static: Mapping[str, str | None], defaults: Mapping[str, str | None],
                    dynamic: Layers = NO_DYNAMIC) -> list[ConfigSynonym]:
    group = next((g for g in SYNONYM_GROUPS if name in g), (name,))
    if name != base_name(name):  # listener.name.<l>.<key>: the base key is its synonym (Kafka's)
        group = (name, base_name(name))
    layers = ((dynamic[0], DYNAMIC_BROKER_CONFIG), (dynamic[1], DYNAMIC_DEFAULT_BROKER_CONFIG),
              (static, STATIC_BROKER_CONFIG))
    found: list[ConfigSynonym] = [{"name": n, "value": None if _sensitive(n) else values[n], "source": source}
             for values, source in layers for n in group if n in values]
    found += [{"name": n, "value": defaults[n], "source": DEFAULT_CONFIG}
              for n in group if defaults.get(n) is not None]
    first_own = next((i for i, s in enumerate(found) if s["name"] == name), len(found))
    return found[first_own:]


def property_synonyms(config: BrokerConfig, name: str) -> list[ConfigSynonym]:
    """The static and default synonyms of one broker property; none for a name eosbroker has no
    property of."""
    return broker_synonyms(name, _static_values(config), _default_values())


def _config_type(key: str) -> int:
    kind = _spec_kind(key)
    if kind is not None:
        return _CONFIG_TYPES.get(kind, 2)
    # Kafka's types of the dynamic configs eosbroker has no property for; UNKNOWN (0) for custom ones
    return 7 if base_name(key) in LIST_CONFIGS else 2 if base_name(key) in DYNAMIC_CONFIGS else 0


def broker_config_entries(config: BrokerConfig, include_synonyms: bool, dynamic: Layers = NO_DYNAMIC,
                          per_broker: bool = True) -> list[ConfigEntry]:
    """config: the static config (what server.properties and --set gave)."""
    static, defaults = _static_values(config), _default_values()
    names = PROPERTY_FIELDS.keys() | dynamic[0].keys() | dynamic[1].keys() if per_broker else dynamic[1].keys()
    out: list[ConfigEntry] = []
    for key in sorted(names):
        synonyms = broker_synonyms(key, static, defaults, dynamic)
        if not per_broker:  # Kafka describes the default entity with its own entries only
            synonyms = [s for s in synonyms if s["source"] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        out.append({"name": key, "value": synonyms[0]["value"] if synonyms else defaults.get(key),
                    "read_only": key not in DYNAMIC_CONFIGS,
                    "config_source": synonyms[0]["source"] if synonyms else DEFAULT_CONFIG,
                    "is_sensitive": _sensitive(key), "synonyms": synonyms if include_synonyms else [],
                    "config_type": _config_type(key)})
    return out


def topic_default_synonyms(config: BrokerConfig, topic_key: str, default: object,
                           dynamic: Layers = NO_DYNAMIC) -> list[ConfigSynonym]:
    """The synonyms a topic config inherits from the broker property behind its default (Kafka's
    LogConfig synonyms); a property eosbroker does not read shows its dynamic values, if set, then
    Kafka's default, the topic's."""
    broker_key = TOPIC_CONFIG_DEFAULTS_FROM_BROKER.get(topic_key) or TOPIC_CONFIG_SYNONYMS.get(topic_key)
    if broker_key is None:
        return []
    if broker_key not in PROPERTY_FIELDS:
        layers = ((dynamic[0], DYNAMIC_BROKER_CONFIG), (dynamic[1], DYNAMIC_DEFAULT_BROKER_CONFIG))
        found: list[ConfigSynonym] = [{"name": broker_key, "value": values[broker_key], "source": source}
                 for values, source in layers if broker_key in values]
        kafka_default = KAFKA_TOPIC_DEFAULTS.get(topic_key) if found else render(default)
        return [*found, {"name": broker_key, "value": kafka_default, "source": DEFAULT_CONFIG}]
    return broker_synonyms(broker_key, _static_values(config), _default_values(), dynamic)
