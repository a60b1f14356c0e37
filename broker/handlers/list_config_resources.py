"""ListConfigResources v0-1 (KIP-714's ListClientMetricsResources, generalised by KIP-1142).

Behaviour, as Kafka 4.x's KafkaApis.handleListConfigResources: DESCRIBE_CONFIGS on the CLUSTER or
CLUSTER_AUTHORIZATION_FAILED. v0 lists client-metrics resources only; v1 lists the types asked for
(none asked: every type it knows), or answers UNSUPPORTED_VERSION when one asked for is not TOPIC,
BROKER, BROKER_LOGGER, CLIENT_METRICS or GROUP. Groups are those with configs of their own
(broker/group_configs.py), brokers and broker loggers the live brokers by id, topics every topic
(internal ones too). eosbroker keeps no client-metrics resources (it has no client telemetry,
KIP-714), so that type lists none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from .. import group_configs
from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .describe_configs import BROKER, BROKER_LOGGER, CLIENT_METRICS, TOPIC
from .metadata import live_brokers

if TYPE_CHECKING:
    from protocol.request_types.list_config_resources import ListConfigResourcesRequest

# Kafka's ListConfigResourcesRequest.supportedResourceTypes, per version.
_V0_TYPES: Final = (CLIENT_METRICS,)
_V1_TYPES: Final = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, group_configs.GROUP)
# The order Kafka lists them in, whatever the request's order (a type asked twice is listed once).
_ORDER: Final = (group_configs.GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)


def _names(ctx: RequestContext, resource_type: int) -> list[str]:
    if resource_type == group_configs.GROUP:
        dynamic = ctx.broker.dynamic_config
        return dynamic.group_ids() if dynamic is not None else []
    if resource_type in (BROKER, BROKER_LOGGER):
        return [str(b.node_id) for b in live_brokers(ctx)]
    if resource_type == TOPIC:
        return list(ctx.broker.logs.topics)
    return []  # CLIENT_METRICS: none kept


async def handle(ctx: RequestContext, request: ListConfigResourcesRequest) -> object:
    require_cluster(ctx, AclOperation.DESCRIBE_CONFIGS)
    supported = _V0_TYPES if ctx.version == 0 else _V1_TYPES
    asked = set(getattr(request, "resource_types", ())) or set(supported)
    if not asked <= set(supported):
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.unsupported_version, "config_resources": []})
    resources = [{"resource_name": name, "resource_type": t}
                 for t in _ORDER if t in asked for name in _names(ctx, t)]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "config_resources": resources})


HANDLER = Handler(api_key=ApiKey.LIST_CONFIG_RESOURCES, min_version=0, max_version=1, handle=handle)
