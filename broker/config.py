"""Broker configuration read from Kafka's own property names into a BrokerConfig.

server.properties and --set values are parsed with each field's ConfigDef entry (broker/config_def.py),
the derived values resolved (log.retention.ms > minutes > hours, listeners) and Kafka's start-up checks
applied. BrokerConfig itself is declared in broker/config_fields.py; this module is the one callers import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Unpack

from .config_def import BOOLEAN, HOUR_MS, LONG, STRING, ConfigError, FieldValues, Spec
from .config_fields import PROPERTY_FIELDS, BrokerConfig
from .listeners import CommandLine, ListenerError, resolve_listeners

__all__ = ("CONFIG_ALIASES", "IGNORED_PROPERTIES", "LISTENER_PREFIX", "PROPERTY_FIELDS", "BrokerConfig",
           "ConfigError", "Spec", "build_config", "load_properties", "parse_sets")

AUTHORIZER_CLASS_NAMES: Final = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                 "kafka.security.authorizer.AclAuthorizer")


def _default(name: str) -> Any:  # the default of the field `name`: its own type
    return BrokerConfig.__dataclass_fields__[name].default


def _spec(name: str) -> Spec:
    f = BrokerConfig.__dataclass_fields__[name]
    spec: Spec | None = f.metadata.get("kafka")
    if spec is not None:
        return spec
    # A field declared without prop() (tests/broker/test_config.py asks for one): no validator.
    kind = str(f.type)
    return Spec(BOOLEAN if "bool" in kind else LONG if "int" in kind else STRING)


# Accepted for compatibility with server.properties files; they have no effect on a single node
# (the listener ones are read while resolving listeners).
IGNORED_PROPERTIES = frozenset({
    "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names", "listener.security.protocol.map",
    "num.network.threads", "num.io.threads", "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "min.insync.replicas", "num.recovery.threads.per.data.dir", "broker.id",
    # in Kafka 4's own server.properties; share groups (KIP-932) are not served here
    "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
})
LISTENER_PREFIX: Final = "listener.name."
CONFIG_ALIASES: Final = {"log.dir": "log.dirs", "broker.id": "node.id"}
# key, then "=", ":" or whitespace, then the value (a key alone has an empty value, as in Java)
_PROPERTY_LINE: Final = re.compile(r"^([^=:\s]+)(?:\s*[=:\s]\s*(.*))?$")


def _logical_lines(text: str) -> Iterable[str]:
    """Lines of a .properties file with comments dropped and backslash continuations joined."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def load_properties(path: Path) -> dict[str, str]:
    """Parse a Java .properties file: key=value, key: value or key value; # and ! comments."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read --config {path}: {exc.strerror or exc}") from None
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        m = _PROPERTY_LINE.match(line)
        if m is None:
            raise ConfigError(f"{path}: cannot parse line {line!r}; expected key=value")
        props[m[1]] = (m[2] or "").strip()
    return props


def parse_sets(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def build_config(props: Mapping[str, str], **overrides: Unpack[CommandLine]) -> tuple[BrokerConfig, list[str]]:
    """BrokerConfig from properties and the command line (overrides: host, port, log_dirs,
    advertised_host, advertised_port; None means not given). Returns it with the unknown keys."""
    values, unknown = _typed_values(props)
    if overrides.get("log_dirs") is not None:
        values["log_dirs"] = overrides["log_dirs"]
    try:
        _resolve_log_dirs(values)
        _resolve_times(values, props)
        _check_assignors(values)
        _check_socket_buffers(values)
        _check_processes(values.get("broker_processes", "1"))
        _check_object_store(values)
        values.update(resolve_listeners(values.get("listeners"), values.get("advertised_listeners"), props,
                                        overrides, default=(_default("host"), _default("port"))))
        _check_authorizer(values.get("authorizer_class_name", ""), values.get("super_users", ""))
    except ListenerError as exc:
        raise ConfigError(str(exc)) from None
    return BrokerConfig(**values, static_keys=_static_keys(props, overrides)), unknown


def _static_keys(props: Mapping[str, str], cli: CommandLine) -> frozenset[str]:
    keys = {CONFIG_ALIASES.get(k, k) for k in props} & PROPERTY_FIELDS.keys()
    if cli.get("log_dirs") is not None:
        keys.add("log.dirs")
    if cli.get("host") is not None or cli.get("port") is not None:
        keys.add("listeners")
    if cli.get("advertised_host") is not None or cli.get("advertised_port") is not None:
        keys.add("advertised.listeners")
    return frozenset(keys)


def _typed_values(props: Mapping[str, str]) -> tuple[FieldValues, list[str]]:
    values: FieldValues = {}
    unknown: list[str] = []
    for key, raw in props.items():
        if key == "log.dir" and "log.dirs" in props:
            continue  # Kafka: log.dirs wins over log.dir
        key = CONFIG_ALIASES.get(key, key)
        if key in IGNORED_PROPERTIES:
            continue
        if key.startswith(LISTENER_PREFIX):
            values.setdefault("listener_overrides", {})[key] = raw.strip()
            continue
        name = PROPERTY_FIELDS.get(key)
        if name is None:
            unknown.append(key)
            continue
        values[name] = _spec(name).parse(key, raw)
    return values, unknown


def _resolve_log_dirs(values: FieldValues) -> None:
    given = values.get("log_dirs", _default("log_dirs"))
    dirs = [d.strip() for d in given.split(",") if d.strip()]
    if not dirs:
        raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
    if len(dirs) > 1:
        raise ConfigError(f"log.dirs={given} lists {len(dirs)} directories; eosbroker keeps its logs in one")
    values["log_dirs"] = dirs[0]


def _resolve_times(values: FieldValues, props: Mapping[str, str]) -> None:
    """Kafka's KafkaConfig.logRetentionTimeMillis and logRollTimeMillis: ms > minutes > hours;
    a negative retention means unlimited (-1)."""
    source = next((k for k in ("log.retention.ms", "log.retention.minutes", "log.retention.hours") if k in props),
                  None)
    if "log_retention_ms" not in values:
        minutes = values.get("log_retention_minutes")
        hours = values.get("log_retention_hours", _default("log_retention_hours"))
        values["log_retention_ms"] = minutes * 60_000 if minutes is not None else hours * HOUR_MS
    if values["log_retention_ms"] < 0:
        values["log_retention_ms"] = -1
    if values["log_retention_ms"] == 0:
        raise ConfigError(f"Invalid value {props.get(source or '', '0')} for configuration {source}: "
                          "log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
    if "log_roll_ms" not in values:
        values["log_roll_ms"] = values.get("log_roll_hours", _default("log_roll_hours")) * HOUR_MS
    if values["log_roll_ms"] < 1:
        raise ConfigError(f"Invalid value {props['log.roll.ms']} for configuration log.roll.ms: "
                          "log.roll.ms must be greater than or equal to 1")


def _check_socket_buffers(values: FieldValues) -> None:
    """-1 keeps the OS's buffers; 0 is what Java's setReceiveBufferSize refuses at start-up."""
    for name in ("socket_send_buffer_bytes", "socket_receive_buffer_bytes"):
        if values.get(name) == 0:
            raise ConfigError(f"Invalid value 0 for configuration {name.replace('_', '.')}: "
                              "a buffer size is -1 (the OS default) or at least 1")


def _check_processes(raw: str) -> None:
    value = raw.strip().lower()
    if value != "auto" and not (value.isdigit() and int(value) >= 1):
        raise ConfigError(f"Invalid value {raw} for configuration broker.processes: a number of processes "
                          "(at least 1) or auto")


def _check_object_store(values: FieldValues) -> None:
    url = values.get("cluster_object_store_url")
    if url is None:
        return
    if not values.get("cluster_url"):
        raise ConfigError("cluster.object.store.url needs cluster.url: the object store holds record data, "
                          "the cluster database where it is")
    if not url.startswith(("s3://", "file:///")):
        raise ConfigError(f"Invalid value {url} for configuration cluster.object.store.url: "
                          "s3://BUCKET/PREFIX or file:///DIR")


def _check_authorizer(class_name: str, super_users: str) -> None:
    if class_name and class_name not in AUTHORIZER_CLASS_NAMES:
        raise ConfigError(f"Invalid value {class_name} for configuration authorizer.class.name: eosbroker implements "
                          f"Kafka's StandardAuthorizer only: set {AUTHORIZER_CLASS_NAMES[0]} (or "
                          f"{AUTHORIZER_CLASS_NAMES[1]}), or leave it empty for no ACLs")
    # Kafka's SecurityUtils.parseKafkaPrincipal, which StandardAuthorizer.configure applies to each.
    for principal in filter(None, (p.strip() for p in super_users.split(";"))):
        kind, sep, name = principal.partition(":")
        if not sep or not kind or not name:
            raise ConfigError(f"Invalid value {super_users} for configuration super.users: expected principals as "
                              f"Type:name separated by ';' (as in User:admin;User:ops), got {principal!r}")


_CONSUMER_ASSIGNORS: Final = ("uniform", "range")


def _check_assignors(values: FieldValues) -> None:
    raw = values.get("group_consumer_assignors", _default("group_consumer_assignors"))
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in _CONSUMER_ASSIGNORS]
    if not names or unknown:
        raise ConfigError(f"Invalid value {raw} for configuration group.consumer.assignors: the built-in "
                          f"assignors are {', '.join(_CONSUMER_ASSIGNORS)} (custom assignor classes cannot "
                          "be loaded)")
    values["group_consumer_assignors"] = ",".join(names)

