"""DescribeConfigs v1-4.

Behaviour: topic resources (type 2) list every Kafka topic config with its effective value and
whether it is the topic's own (DYNAMIC_TOPIC_CONFIG) or a default (the broker's property if it
has one: a dynamic broker config, per broker or cluster-wide, STATIC_BROKER_CONFIG when it is set,
else Kafka's default, DEFAULT_CONFIG), typed as Kafka types them; broker resources (type 4) list
the broker's properties with Kafka's sources (named "", the cluster default's dynamic configs only);
include_synonyms adds Kafka's synonyms to both (broker/broker_configs.py). Broker-logger resources
(type 8) list the broker's loggers and their levels (broker/log_levels.py); group resources
(type 32) every group config, the group's own (GROUP_CONFIG) or the broker's default. configuration_keys
filters (null or empty: all). Unknown topics give UNKNOWN_TOPIC_OR_PARTITION. Client-metrics
resources (type 16) are INVALID_REQUEST saying that eosbroker has no client telemetry (KIP-714).
include_documentation (v3+) gives each config a line on it in eosbroker's words (broker/config_docs.py:
type, default, allowed values, whether it changes at run time), null for loggers, as in Kafka."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TOPIC_CONFIG_TYPES, TopicMetadata

from .. import config_docs, group_configs
from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_config_access
from ..broker_configs import (
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    NO_DYNAMIC,
    ConfigEntry,
    ConfigSynonym,
    Layers,
    broker_config_entries,
    topic_default_synonyms,
)
from ..config import BrokerConfig
from ..handler import Handler, RequestContext
from ..log_levels import current_levels

if TYPE_CHECKING:
    from protocol.request_types.describe_configs import DescribeConfigsRequest, DescribeConfigsResource

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
# What a CLIENT_METRICS resource (KIP-714) is answered with, by every config API.
NO_CLIENT_METRICS = ("eosbroker keeps no client-metrics resources: it has no client telemetry (KIP-714: "
                     "GetTelemetrySubscriptions, PushTelemetry)")
DYNAMIC_BROKER_LOGGER_CONFIG = 6
# DescribeConfigs v3+ config_type (Kafka's ConfigEntry.ConfigType)
_STRING = 2
_CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7}


def _config_type(name: str) -> int:
    return _CONFIG_TYPES.get(TOPIC_CONFIG_TYPES.get(name, "string"), _STRING)


def _static_and_dynamic(ctx: RequestContext) -> tuple[BrokerConfig, Layers]:
    dynamic = ctx.broker.dynamic_config
    if dynamic is None:
        return ctx.broker.config, NO_DYNAMIC
    return dynamic.static, dynamic.layers()


def topic_config_entries(ctx: RequestContext, meta: TopicMetadata,
                         include_synonyms: bool = False) -> list[ConfigEntry]:
    defaults = ctx.broker.logs.topic_defaults()
    static, layers = _static_and_dynamic(ctx)
    out: list[ConfigEntry] = []
    # Every config Kafka defines has a default; a name stored by an earlier eosbroker that Kafka 4
    # no longer defines (message.format.version, ...) is left out rather than failing the request.
    for name in sorted(defaults):
        own = name in meta.configs
        value = meta.configs[name] if own else defaults[name]
        synonyms: list[ConfigSynonym] = [{"name": name, "value": value, "source": DYNAMIC_TOPIC_CONFIG}] if own else []
        synonyms += topic_default_synonyms(static, name, defaults[name], layers)
        out.append({"name": name, "value": value, "read_only": False,
                    "config_source": synonyms[0]["source"] if synonyms else DEFAULT_CONFIG,
                    "is_sensitive": False, "synonyms": synonyms if include_synonyms else [],
                    "config_type": _config_type(name)})
    return out


def logger_config_entries() -> list[ConfigEntry]:
    return [{"name": name, "value": level, "read_only": False, "config_source": DYNAMIC_BROKER_LOGGER_CONFIG,
             "is_sensitive": False, "synonyms": [], "config_type": _STRING} for name, level in current_levels()]


# A config's documentation, by resource type (none for broker loggers, as in Kafka)
_DOCS = {TOPIC: config_docs.topic_doc, BROKER: config_docs.broker_doc, group_configs.GROUP: config_docs.group_doc}


def _documented(entry: ConfigEntry, doc: Callable[[str], str | None] | None) -> ConfigEntry:
    """Null where not asked for or not known, as Kafka's ConfigHelper sets it (v3+ must carry it)."""
    documented = entry.copy()
    documented["documentation"] = doc(entry["name"]) if doc is not None else None
    return documented


def _describe(ctx: RequestContext, resource: DescribeConfigsResource, include_synonyms: bool,
              documentation: bool) -> dict[str, object]:
    entry: dict[str, object] = {"resource_type": resource.resource_type, "resource_name": resource.resource_name,
                                "error_code": ErrorCode.none, "configs": []}
    try:
        require_config_access(ctx, AclOperation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name)
        configs = _configs(ctx, resource.resource_type, resource.resource_name, include_synonyms)
    except KafkaError as exc:
        return entry | {"error_code": exc.code, "error_message": exc.message}
    # Kafka's ConfigHelper: a null and an empty key list both mean every config.
    keys = resource.configuration_keys
    if keys:
        configs = [c for c in configs if c["name"] in keys]
    doc = _DOCS.get(resource.resource_type) if documentation else None
    configs = [_documented(c, doc) for c in configs]
    return entry | {"configs": configs}


def _configs(ctx: RequestContext, kind: int, name: str, include_synonyms: bool) -> list[ConfigEntry]:
    """The configs of one resource, or the KafkaError it is answered with."""
    if kind == TOPIC:
        meta = ctx.broker.logs.topics.get(name)
        if meta is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        return topic_config_entries(ctx, meta, include_synonyms)
    if kind == BROKER:
        if name not in ("", str(ctx.broker.node_id)):
            raise KafkaError(ErrorCode.invalid_request, f"Unexpected broker id, expected {ctx.broker.node_id} or "
                             f"empty string, but received {name}")
        static, layers = _static_and_dynamic(ctx)
        return broker_config_entries(static, include_synonyms, layers, per_broker=name != "")
    if kind == BROKER_LOGGER:
        if name != str(ctx.broker.node_id):
            raise KafkaError(ErrorCode.invalid_request,
                             f"Unexpected broker id, expected {ctx.broker.node_id}, but received {name}")
        return logger_config_entries()
    if kind == group_configs.GROUP:
        if not name:
            raise KafkaError(ErrorCode.invalid_request, "Group name must not be empty")
        dynamic = ctx.broker.dynamic_config
        own = dynamic.group_configs(name) if dynamic is not None else {}
        return group_configs.group_entries(own, ctx.broker.config, include_synonyms)
    if kind == CLIENT_METRICS:
        raise KafkaError(ErrorCode.invalid_request, NO_CLIENT_METRICS)
    raise KafkaError(ErrorCode.invalid_request, f"resource type {kind} is not supported")


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> object:
    synonyms = getattr(request, "include_synonyms", False)
    documentation = getattr(request, "include_documentation", False)
    results = [_describe(ctx, r, synonyms, documentation) for r in request.resources]
    return ctx.respond({"throttle_time": 0, "results": results})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_CONFIGS, min_version=1, max_version=4, handle=handle)

