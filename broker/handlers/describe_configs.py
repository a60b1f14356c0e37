"""DescribeConfigs v1-4.

Behaviour: topic resources (type 2) list every Kafka topic config with its effective value and
whether it is the topic's own (DYNAMIC_TOPIC_CONFIG) or a default (DEFAULT_CONFIG: the broker's
property if it has one, else Kafka's default), typed as Kafka types them; broker resources
(type 4) list the broker's properties. configuration_keys filters (null or empty: all). Unknown
topics give UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import TOPIC_CONFIG_TYPES, TopicMetadata

from ..config import PROPERTY_FIELDS
from ..handler import Handler, RequestContext

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
# DescribeConfigs v3+ config_type (Kafka's ConfigEntry.ConfigType)
_STRING = 2
_CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7}


def _render(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _config_type(name: str) -> int:
    return _CONFIG_TYPES.get(TOPIC_CONFIG_TYPES.get(name, "string"), _STRING)


def topic_config_entries(ctx: RequestContext, meta: TopicMetadata) -> list[dict[str, Any]]:
    defaults = ctx.broker.logs.topic_defaults()
    out = []
    for name in sorted(defaults.keys() | meta.configs.keys()):
        own = name in meta.configs
        out.append({"name": name, "value": meta.configs[name] if own else defaults[name], "read_only": False,
                    "config_source": DYNAMIC_TOPIC_CONFIG if own else DEFAULT_CONFIG,
                    "is_sensitive": False, "synonyms": [], "config_type": _config_type(name)})
    return out


def broker_config_entries(ctx: RequestContext) -> list[dict[str, Any]]:
    config = ctx.broker.config
    defaults = type(config)()
    out = []
    for key, field in sorted(PROPERTY_FIELDS.items()):
        value = getattr(config, field)
        source = DEFAULT_CONFIG if value == getattr(defaults, field) else STATIC_BROKER_CONFIG
        out.append({"name": key, "value": _render(value), "read_only": True, "config_source": source,
                    "is_sensitive": False, "synonyms": [], "config_type": _STRING})
    return out


def _describe(ctx: RequestContext, resource: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"resource_type": resource.resource_type, "resource_name": resource.resource_name,
                             "error_code": ErrorCode.none, "configs": []}
    if resource.resource_type == TOPIC:
        meta = ctx.broker.logs.topics.get(resource.resource_name)
        if meta is None:
            return entry | {"error_code": ErrorCode.unknown_topic_or_partition,
                            "error_message": f"topic {resource.resource_name!r} does not exist"}
        configs = topic_config_entries(ctx, meta)
    elif resource.resource_type == BROKER:
        if resource.resource_name not in ("", str(ctx.broker.node_id)):
            return entry | {"error_code": ErrorCode.invalid_request,
                            "error_message": f"this is broker {ctx.broker.node_id}, not {resource.resource_name}"}
        configs = broker_config_entries(ctx)
    else:
        return entry | {"error_code": ErrorCode.invalid_request,
                        "error_message": f"resource type {resource.resource_type} is not supported"}
    # Kafka's ConfigHelper: a null and an empty key list both mean every config.
    keys = resource.configuration_keys
    if keys:
        configs = [c for c in configs if c["name"] in keys]
    return entry | {"configs": configs}


async def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond({"throttle_time": 0, "results": [_describe(ctx, r) for r in request.resources]})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_CONFIGS, min_version=1, max_version=4, handle=handle)

