"""What DescribeConfigs says of a config when asked for its documentation (v3+ include_documentation).

Kafka answers with the prose of its ConfigDef. eosbroker answers in its own words with what it
knows of each config: its type, default and allowed values, whether it changes at run time, and
whether eosbroker acts on it. Null, as in Kafka, for broker loggers and for a name eosbroker
does not define.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from storage.api import TOPIC_CONFIG_DEFAULTS_FROM_BROKER, TOPIC_CONFIG_TYPES

from .config import CONFIG_ALIASES, IGNORED_PROPERTIES, PROPERTY_FIELDS, BrokerConfig, Spec
from .dynamic_keys import DYNAMIC_CONFIGS
from .group_configs import GROUP_KEYS

__all__ = ("broker_doc", "group_doc", "topic_doc")

_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig)}


def _values(spec: Spec) -> str:
    if spec.choices:
        return "one of " + ", ".join(spec.choices)
    if spec.at_least is not None and spec.at_most is not None:
        return f"from {spec.at_least} to {spec.at_most}"
    if spec.at_least is not None:
        return f"at least {spec.at_least}"
    if spec.at_most is not None:
        return f"at most {spec.at_most}"
    return ""


def _default(value: object) -> str:
    return "none" if value is None or value == "" else str(value).lower() if isinstance(value, bool) else str(value)


@cache
def broker_doc(name: str) -> str | None:
    changes = ("Changes at run time, per broker or cluster-wide (kafka-configs --alter --entity-type brokers)."
               if name in DYNAMIC_CONFIGS else "Set in server.properties or with --set; read at start-up.")
    field_name = PROPERTY_FIELDS.get(name)
    if field_name is not None:
        spec: Spec = _FIELDS[field_name].metadata["kafka"]
        values = _values(spec)
        return (f"{spec.kind.capitalize()}, default {_default(_FIELDS[field_name].default)}"
                f"{'; ' + values if values else ''}. {changes}")
    if name in CONFIG_ALIASES:
        return f"Another name for {CONFIG_ALIASES[name]}."
    if name in IGNORED_PROPERTIES:
        return "Accepted for compatibility with Kafka's server.properties; eosbroker does not act on it."
    if name in DYNAMIC_CONFIGS:
        return f"{changes} Kept and described; eosbroker does not act on it."
    return None


@cache
def topic_doc(name: str) -> str | None:
    kind = TOPIC_CONFIG_TYPES.get(name)
    if kind is None:
        return None
    broker_key = TOPIC_CONFIG_DEFAULTS_FROM_BROKER.get(name)
    default = f"; without a value of its own, the broker's {broker_key}" if broker_key else ""
    return (f"Topic config, {str(kind).lower()}{default}. "
            "Set with kafka-configs --alter --entity-type topics or at topic creation.")


@cache
def group_doc(name: str) -> str | None:
    key = GROUP_KEYS.get(name)
    if key is None:
        return None
    bounds = f"; within the range the broker's {' and '.join(key.bound_names)} allow" if key.bounds else ""
    return (f"Group config, {key.kind}{bounds}; without a value of its own, the broker's default. "
            "Set with kafka-configs --alter --entity-type groups.")
