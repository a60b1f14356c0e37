"""Group configs (KIP-848; Kafka's GroupConfig): a group's own values of the broker's group.*
settings, set with AlterConfigs / IncrementalAlterConfigs on a GROUP resource (type 32) and read
with DescribeConfigs. Kafka keeps them as ConfigRecords of the group; here they are the entity
"group:<id>" of the dynamic config store (the data dir's file, or PostgreSQL in cluster mode), so
they survive restarts and reach every broker. A group need not exist to have configs.

consumer.session.timeout.ms and consumer.heartbeat.interval.ms take effect at the group's next
heartbeat (consumer protocol groups); the share.* keys of share groups (coordinator/share) at the
group's next request: share.record.lock.duration.ms, share.delivery.count.limit,
share.partition.max.record.locks, share.isolation.level and share.auto.offset.reset when a share-
partition is first used after a restart or change, share.session.timeout.ms and
share.heartbeat.interval.ms at the next heartbeat. The other keys (the assignment intervals and
offload, share.renew.acknowledge.enable, and streams.* for the streams groups eosbroker does not
run) are checked, stored and described only; errors.deadletterqueue.topic.name and
errors.deadletterqueue.copy.record.enable name a share group's dead-letter topic (KIP-1191) and
take effect at the next dead letter. Checks as Kafka's:
unknown names, values of the wrong type or outside a key's range, and a session timeout not above
the heartbeat interval are INVALID_CONFIG.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from coordinator.share.partitions import ShareGroupSettings
from protocol.errors import ErrorCode, KafkaError
from storage.api import IsolationLevel

from .broker_configs import ConfigEntry, ConfigSynonym, property_synonyms
from .config import BrokerConfig

__all__ = ("GROUP", "GROUP_KEYS", "entity", "group_entries", "incremental", "replace", "validate")
T = TypeVar("T")

GROUP: Final = 32  # ConfigResource.Type.GROUP
DYNAMIC_GROUP_CONFIG: Final = 8  # DescribeConfigs' ConfigSource.GROUP_CONFIG
DEFAULT_CONFIG: Final = 5
_CONFIG_TYPES: Final = {"int": 3, "boolean": 1, "string": 2}


@dataclass(frozen=True, slots=True)
class GroupKey:
    kind: str  # "int", "boolean" or "string"
    # Dynamic: a group config's value, of its key's type (int, bool or str).
    default: Callable[[BrokerConfig], Any]
    # (min, max, the broker settings that name them) for ints with a range, else None
    bounds: Callable[[BrokerConfig], tuple[int, int]] | None = None
    bound_names: tuple[str, str] = ("", "")
    at_least: int = 1


def _const(value: T) -> Callable[[BrokerConfig], T]:
    return lambda _: value


def _ranged(group: str, what: str, default: int, low: int, high: int, at_least: int = 1) -> GroupKey:
    """A key Kafka bounds by group.<group>.min/max.<what> (Kafka's defaults: eosbroker has no such
    settings for the groups it does not run)."""
    return GroupKey("int", _const(default), _const((low, high)),
                    (f"group.{group}.min.{what}", f"group.{group}.max.{what}"), at_least)


def _share(what: str, at_least: int = 1) -> GroupKey:
    """A share.* key whose default and bounds are the broker's group.share.[min.|max.]<what>."""
    attr = "group_share_" + what.replace(".", "_")
    names = (f"group.share.min.{what}", f"group.share.max.{what}")
    return GroupKey("int", lambda c: getattr(c, attr), lambda c: (getattr(c, attr.replace("share_", "share_min_", 1)),
                                                                  getattr(c, attr.replace("share_", "share_max_", 1))),
                    names, at_least)


GROUP_KEYS: Final[Mapping[str, GroupKey]] = {
    "consumer.session.timeout.ms": GroupKey(
        "int", lambda c: c.group_consumer_session_timeout_ms,
        lambda c: (c.group_consumer_min_session_timeout_ms, c.group_consumer_max_session_timeout_ms),
        ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms")),
    "consumer.heartbeat.interval.ms": GroupKey(
        "int", lambda c: c.group_consumer_heartbeat_interval_ms,
        lambda c: (c.group_consumer_min_heartbeat_interval_ms, c.group_consumer_max_heartbeat_interval_ms),
        ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms")),
    "consumer.assignment.interval.ms": _ranged("consumer", "assignment.interval.ms", 1000, 0, 15000, at_least=0),
    "consumer.assignor.offload.enable": GroupKey("boolean", _const(True)),
    "share.session.timeout.ms": _share("session.timeout.ms"),
    "share.heartbeat.interval.ms": _share("heartbeat.interval.ms"),
    "share.record.lock.duration.ms": _share("record.lock.duration.ms", 1000),
    "share.delivery.count.limit": _share("delivery.count.limit"),
    "share.partition.max.record.locks": _ranged("share", "partition.max.record.locks", 2000, 100, 4000, 100),
    "share.auto.offset.reset": GroupKey("string", _const("latest")),
    "share.isolation.level": GroupKey("string", _const("read_uncommitted")),
    "share.renew.acknowledge.enable": GroupKey("boolean", _const(True)),
    "share.assignment.interval.ms": _ranged("share", "assignment.interval.ms", 1000, 0, 15000, at_least=0),
    "share.assignor.offload.enable": GroupKey("boolean", _const(True)),
    # KIP-1191 (share.version 2): coordinator/share/dead_letters.py
    "errors.deadletterqueue.topic.name": GroupKey("string", _const("")),
    "errors.deadletterqueue.copy.record.enable": GroupKey("boolean", _const(False)),
    "streams.session.timeout.ms": _ranged("streams", "session.timeout.ms", 45000, 45000, 60000),
    "streams.heartbeat.interval.ms": _ranged("streams", "heartbeat.interval.ms", 5000, 5000, 15000),
    "streams.num.standby.replicas": GroupKey("int", _const(0), _const((0, 2)),
                                             ("0", "group.streams.max.standby.replicas"), 0),
    "streams.initial.rebalance.delay.ms": GroupKey("int", _const(3000), at_least=0),
    "streams.assignment.interval.ms": _ranged("streams", "assignment.interval.ms", 1000, 0, 15000, at_least=0),
    "streams.assignor.offload.enable": GroupKey("boolean", _const(True)),
}
# Kafka defines these internal: a group may set them, DescribeConfigs never lists them.
_INTERNAL: Final = frozenset({"consumer.assignor.offload.enable", "share.assignor.offload.enable",
                              "streams.assignor.offload.enable"})
# The keys whose default is no broker setting's: in Kafka their synonym is the key itself, the others'
# the broker's group.<key> (share.session.timeout.ms: group.share.session.timeout.ms).
_NO_BROKER_SETTING: Final = frozenset({"share.auto.offset.reset", "share.isolation.level",
                                       "share.renew.acknowledge.enable", "errors.deadletterqueue.topic.name",
                                       "errors.deadletterqueue.copy.record.enable"})
_CHOICES: Final = {"share.isolation.level": ("read_committed", "read_uncommitted")}
# (session key, heartbeat key): the session must outlast the interval
_SESSION_OVER_HEARTBEAT: Final = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                                  ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                                  ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


def entity(group_id: str) -> str:
    """The group's entity in the dynamic config store (a broker's entity is its id or "")."""
    return f"group:{group_id}"


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_config, message)


# Dynamic: the value parsed by the key's type (int, bool or str).
def _parse(name: str, raw: str) -> Any:
    key = GROUP_KEYS[name]
    if key.kind == "boolean":
        if raw.strip().lower() not in ("true", "false"):
            raise _invalid(f"Invalid value {raw} for configuration {name}: Expected value to be either true or false")
        return raw.strip().lower() == "true"
    if key.kind == "string":
        if name in _CHOICES and raw not in _CHOICES[name]:
            raise _invalid(f"Invalid value {raw} for configuration {name}: String must be one of: "
                           f"{', '.join(_CHOICES[name])}")
        if name == "share.auto.offset.reset" and raw not in ("earliest", "latest") \
                and not raw.startswith("by_duration:"):
            raise _invalid(f"Invalid value {raw} for configuration {name}: Invalid value `{raw}` for configuration "
                           f"{name}. The value must be either 'earliest', 'latest' or of the format "
                           "'by_duration:<PnDTnHnMn.nS.>'.")
        if name == "errors.deadletterqueue.topic.name" and raw.startswith("__"):
            raise _invalid("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
        return raw
    try:
        value = int(raw.strip())
    except ValueError:
        raise _invalid(f"Invalid value {raw} for configuration {name}: Not a number of type INT") from None
    if not -(1 << 31) <= value < 1 << 31:
        raise _invalid(f"Invalid value {raw} for configuration {name}: Not a number of type INT")
    if value < key.at_least:
        raise _invalid(f"Invalid value {value} for configuration {name}: Value must be at least {key.at_least}")
    return value


def validate(group_id: str, configs: Mapping[str, str | None], broker: BrokerConfig) -> dict[str, str]:
    """The group's new own configs, checked as Kafka's GroupConfig.validate (KafkaError else)."""
    if not group_id:
        raise KafkaError(ErrorCode.invalid_request, "Group name must not be empty")
    nulls = sorted(k for k, v in configs.items() if v is None)
    if nulls:
        raise _invalid(f"Null value not supported for group configs: {','.join(nulls)}")
    for name in configs:
        if name not in GROUP_KEYS:
            raise _invalid(f"Unknown group config name: {name}")
    values = {name: key.default(broker) for name, key in GROUP_KEYS.items()}
    values |= {name: _parse(name, str(raw)) for name, raw in configs.items()}
    for name, key in GROUP_KEYS.items():
        if key.bounds is None:
            continue
        low, high = key.bounds(broker)
        if values[name] < low:
            raise _invalid(f"{name} must be greater than or equal to {key.bound_names[0]}")
        if values[name] > high:
            raise _invalid(f"{name} must be less than or equal to {key.bound_names[1]}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            raise _invalid(f"{session} must be greater than {heartbeat}")
    return {name: str(raw) for name, raw in configs.items()}


def replace(group_id: str, new: Mapping[str, str | None], broker: BrokerConfig) -> dict[str, str]:
    """AlterConfigs: the request's configs become the group's whole set."""
    return validate(group_id, new, broker)


def incremental(group_id: str, current: Mapping[str, str], changes: Sequence[tuple[str, int, str | None]],
                broker: BrokerConfig) -> dict[str, str]:
    """IncrementalAlterConfigs: SET (0) and DELETE (1); APPEND (2) and SUBTRACT (3) are refused,
    no group config being a list."""
    out: dict[str, str | None] = dict(current)
    names = [name for name, _, _ in changes]
    if len(set(names)) < len(names):
        raise KafkaError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    for name, op, value in changes:
        if op == 0:
            out[name] = value
        elif op == 1:
            out.pop(name, None)
        elif op in (2, 3):
            verb = "APPEND" if op == 2 else "SUBTRACT"
            raise _invalid(f"Can't {verb} to key {name} because its type is not LIST.")
        else:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown operation type {op}")
    return validate(group_id, out, broker)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def group_entries(own: Mapping[str, str], broker: BrokerConfig, include_synonyms: bool) -> list[ConfigEntry]:
    """DescribeConfigs entries of every group config but Kafka's internal ones, as Kafka's
    ConfigHelper.createGroupConfigEntry: the group's own value (GROUP_CONFIG) first, then the
    broker setting the default comes from; the source is the first synonym's."""
    out: list[ConfigEntry] = []
    for name, key in GROUP_KEYS.items():
        if name in _INTERNAL:
            continue
        synonyms = _default_synonyms(name, key, broker)
        if name in own:
            synonyms.insert(0, {"name": name, "value": own[name], "source": DYNAMIC_GROUP_CONFIG})
        out.append({"name": name, "value": synonyms[0]["value"], "read_only": False,
                    "config_source": synonyms[0]["source"], "is_sensitive": False,
                    "synonyms": synonyms if include_synonyms else [], "config_type": _CONFIG_TYPES[key.kind]})
    return out


def _default_synonyms(name: str, key: GroupKey, broker: BrokerConfig) -> list[ConfigSynonym]:
    """The broker setting behind a group config's default: static or default if eosbroker has the
    property, else Kafka's default under the setting's name."""
    setting = name if name in _NO_BROKER_SETTING else f"group.{name}"
    found = property_synonyms(broker, setting)
    return found or [{"name": setting, "value": _text(key.default(broker)), "source": DEFAULT_CONFIG}]


def consumer_overrides(own: Mapping[str, str]) -> dict[str, int]:
    """The group's own consumer session timeout and heartbeat interval (validated when set)."""
    out = {}
    for name, field_name in (("consumer.session.timeout.ms", "session_timeout_ms"),
                             ("consumer.heartbeat.interval.ms", "heartbeat_interval_ms")):
        if name in own:
            out[field_name] = int(own[name])
    return out


def share_settings(own: Mapping[str, str], broker: BrokerConfig) -> ShareGroupSettings:
    """A share group's settings in force: its own share.* configs, else the defaults."""
    def value(name: str) -> Any:  # a group config's value: its type is its key's (GROUP_KEYS)
        return _parse(name, own[name]) if name in own else GROUP_KEYS[name].default(broker)
    committed = value("share.isolation.level") == "read_committed"
    return ShareGroupSettings(
        record_lock_duration_ms=value("share.record.lock.duration.ms"),
        delivery_count_limit=value("share.delivery.count.limit"),
        max_record_locks=value("share.partition.max.record.locks"),
        isolation_level=IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED,
        auto_offset_reset=value("share.auto.offset.reset"),
        session_timeout_ms=value("share.session.timeout.ms"),
        heartbeat_interval_ms=value("share.heartbeat.interval.ms"),
        dlq_topic=value("errors.deadletterqueue.topic.name"),
        dlq_copy_record=value("errors.deadletterqueue.copy.record.enable"),
    )
