"""Which broker configs AlterConfigs may change at run time, and Kafka's checks of such a change
(DynamicBrokerConfig.validateConfigs as ConfigAdminManager applies it to a BROKER resource).

Kafka's dynamic keys are DynamicBrokerConfig.AllDynamicConfigs: the listener key stores, the log
cleaner's, the broker-level defaults of topic configs (the first broker synonym of each topic
config), thread pools, metric reporters, listeners and their security, connection quotas, producer
state expiry, remote-log rates, and the replication throttles. Any other config Kafka knows is
refused; a name Kafka does not know is a custom config, accepted and stored as Kafka does.
The listener key stores are per broker only (set with the listener prefix), as are the other
listener configs except the connection limits and network threads. A refusal is INVALID_REQUEST
with Kafka's message (its ConfigException text, which ConfigAdminManager passes on).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from protocol.errors import ErrorCode, KafkaError
from storage.api import TOPIC_CONFIG_DEFAULTS_FROM_BROKER, validate_topic_configs

from .config import IGNORED_PROPERTIES, PROPERTY_FIELDS, BrokerConfig, ConfigError, Spec

__all__ = ("DYNAMIC_CONFIGS", "LIST_CONFIGS", "PER_BROKER_CONFIGS", "base_name", "incremental_broker_alter",
           "validate_dynamic", "validate_thread_counts")

# SslConfigs.RECONFIGURABLE_CONFIGS: the key and trust stores (Kafka's DynamicSecurityConfigs)
SSL_STORE_CONFIGS: Final = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
# DynamicListenerConfig.ReconfigurableConfigs; Kafka 4 (KRaft) left advertised.listeners out: a broker
# registers its endpoints with the controller at start-up.
LISTENER_CONFIGS: Final = SSL_STORE_CONFIGS | frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config",
    "sasl.enabled.mechanisms", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "max.connections", "max.connection.creation.rate", "num.network.threads"})
# Kafka's ClusterLevelListenerConfigs: listener configs that may also be set cluster-wide
CLUSTER_LEVEL_LISTENER_CONFIGS: Final = frozenset({"max.connections", "max.connection.creation.rate",
                                                  "num.network.threads"})
# DynamicLogConfig.ReconfigurableConfigs: the first broker synonym of every topic config
# (ServerTopicConfigSynonyms) but message.format.version's
LOG_CONFIGS: Final = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes", "log.retention.ms",
    "message.max.bytes", "log.index.interval.bytes", "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
    "min.insync.replicas", "compression.type", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level", "log.preallocate", "log.message.timestamp.type",
    "log.message.timestamp.difference.max.ms", "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms", "log.message.downconversion.enable", "log.local.retention.ms",
    "log.local.retention.bytes"})
# LogCleaner.ReconfigurableConfigs
CLEANER_CONFIGS: Final = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms"})
# DynamicThreadPool, metric reporters, SocketServer, producer state, DynamicRemoteLogConfig and
# QuotaConfig.brokerQuotaConfigs
OTHER_CONFIGS: Final = frozenset({
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "metric.reporters", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
    "remote.list.offsets.request.timeout.ms", "leader.replication.throttled.rate",
    "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"})
DYNAMIC_CONFIGS: Final = LISTENER_CONFIGS | LOG_CONFIGS | CLEANER_CONFIGS | OTHER_CONFIGS
PER_BROKER_CONFIGS: Final = LISTENER_CONFIGS - CLUSTER_LEVEL_LISTENER_CONFIGS
# The configs eosbroker knows (its own properties included) that cannot change at run time.
STATIC_CONFIGS: Final = (PROPERTY_FIELDS.keys() | IGNORED_PROPERTIES | {"broker.id", "log.dir"}) - DYNAMIC_CONFIGS
# Kafka's LIST-typed dynamic configs: the ones APPEND and SUBTRACT work on.
LIST_CONFIGS: Final = frozenset({
    "log.cleanup.policy", "metric.reporters", "ssl.cipher.suites", "ssl.enabled.protocols",
    "sasl.enabled.mechanisms", "sasl.kerberos.principal.to.local.rules", "listeners"})
# Kafka's thread pools that eosbroker has no property for, with Kafka's defaults: their type is
# checked here, and a change by more than half or double, as Kafka's DynamicThreadPool refuses it.
THREAD_POOL_DEFAULTS: Final = {"num.io.threads": 8, "num.network.threads": 3, "num.replica.fetchers": 1,
                               "num.recovery.threads.per.data.dir": 2, "background.threads": 10}
_LISTENER_CONFIG: Final = re.compile(r"^listener\.name\.[^.]*\.(.*)$")
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def base_name(name: str) -> str:
    """listener.name.<l>.<config> -> <config>; any other name as it is."""
    m = _LISTENER_CONFIG.match(name)
    return m[1] if m else name


def _kafka_set(names: Iterable[str]) -> str:
    """A set in Kafka 4's messages (Java's Set.toString), in sorted order."""
    return f"[{', '.join(sorted(names))}]"


def _refuse_any(names: set[str], why: str) -> None:
    if names:
        raise KafkaError(ErrorCode.invalid_request, f"{why}: {_kafka_set(names)}")


def validate_dynamic(props: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs of a BROKER resource's whole new dynamic set."""
    _refuse_any({k for k in props if k in STATIC_CONFIGS}, "Cannot update these configs dynamically")
    _refuse_any({k for k in props if k in SSL_STORE_CONFIGS},
                "These security configs can be dynamically updated only per-listener using the listener prefix")
    for name, value in props.items():
        _check_value(base_name(name), value)
    if not per_broker:
        _refuse_any({k for k in props if base_name(k) in PER_BROKER_CONFIGS},
                    "Cannot update these configs at default cluster level, broker id must be specified")


_TOPIC_KEY_OF: Final = {broker: topic for topic, broker in TOPIC_CONFIG_DEFAULTS_FROM_BROKER.items()}


def _check_value(name: str, value: str) -> None:
    field = PROPERTY_FIELDS.get(name)
    try:
        if name in THREAD_POOL_DEFAULTS:
            Spec("INT", at_least=1).parse(name, value)
        elif field is not None:
            spec: Spec | None = BrokerConfig.__dataclass_fields__[field].metadata.get("kafka")
            if spec is not None:
                spec.parse(name, value)
        elif name in _TOPIC_KEY_OF:  # log.cleanup.policy, compression.type, ...: as the topic config
            validate_topic_configs({_TOPIC_KEY_OF[name]: value})
    except ConfigError as exc:
        raise KafkaError(ErrorCode.invalid_request, str(exc)) from None
    except KafkaError as exc:
        raise KafkaError(ErrorCode.invalid_request, f"Invalid value {value} for configuration {name}: "
                                                    f"{exc.message}") from None
    # KafkaConfig's own checks of the two derived times (broker/config.py's _resolve_times)
    if name == "log.retention.ms" and int(value) == 0:
        raise KafkaError(ErrorCode.invalid_request, f"Invalid value {value} for configuration {name}: log.retention.ms "
                                                    "must be unlimited (-1) or, greater than or equal to 1")
    if name == "log.roll.ms" and int(value) < 1:
        raise KafkaError(ErrorCode.invalid_request, f"Invalid value {value} for configuration {name}: "
                                                    "log.roll.ms must be greater than or equal to 1")

def validate_thread_counts(old: Mapping[str, str], new: Mapping[str, str], cleaner_threads: int) -> None:
    """Kafka's validateReconfiguration of its thread pools and the log cleaner: old and new are
    this broker's dynamic configs (default and own, merged) before and after the change;
    cleaner_threads the log cleaner's current count."""
    for name, default in THREAD_POOL_DEFAULTS.items():
        current, wanted = int(old.get(name, default)), int(new.get(name, default))
        why = f"Dynamic thread count update validation failed for {name}={wanted}, value should"
        if wanted != current and wanted < current // 2:
            raise KafkaError(ErrorCode.invalid_request, f"{why} be at least half the current value {current}")
        if wanted != current and wanted > current * 2:
            raise KafkaError(ErrorCode.invalid_request, f"{why} not be greater than double the current value {current}")
    if "log.cleaner.threads" not in new:
        return
    wanted = int(new["log.cleaner.threads"])
    if wanted < 1:
        raise KafkaError(ErrorCode.invalid_request, "Log cleaner threads should be at least 1")
    if wanted < cleaner_threads // 2:
        raise KafkaError(ErrorCode.invalid_request, "Log cleaner threads cannot be reduced to less than half the "
                                                    f"current value {cleaner_threads}")
    if wanted > cleaner_threads * 2:
        raise KafkaError(ErrorCode.invalid_request, "Log cleaner threads cannot be increased to more than double "
                                                    f"the current value {cleaner_threads}")


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def incremental_broker_alter(current: Mapping[str, str], changes: Iterable[tuple[str, int, str | None]],
                             defaults: Mapping[str, str | None]) -> dict[str, str]:
    """An entity's dynamic set after IncrementalAlterConfigs operations (Kafka's
    prepareIncrementalConfigs): APPEND and SUBTRACT on list configs only, starting from the stored
    value or else Kafka's default."""
    out = dict(current)
    for name, op, value in changes:
        if op == DELETE:
            out.pop(name, None)
        elif op not in (SET, APPEND, SUBTRACT):
            raise KafkaError(ErrorCode.invalid_request, f"Unknown operations type {op}")
        elif value is None:
            raise KafkaError(ErrorCode.invalid_request, f"Null value not supported for : {name}")
        elif op == SET:
            out[name] = value
        elif base_name(name) not in LIST_CONFIGS:
            raise KafkaError(ErrorCode.invalid_config,
                             f"Config value {'append' if op == APPEND else 'subtract'} is not allowed for config "
                             f"key: {name}")
        else:
            old = out.get(name, defaults.get(base_name(name)))
            items = _split(old) if old else []
            if op == APPEND:
                items += [v for v in _split(value) if v not in items]
            else:
                items = [v for v in items if v not in _split(value)]
            out[name] = ",".join(items)
    return out
