"""IncrementalAlterConfigs v0-1.

Behaviour: per topic resource, applies each operation to the topic's own configs: SET (0) and
DELETE (1, back to the broker default) for any topic config, APPEND (2) and SUBTRACT (3) for list
configs (cleanup.policy, the throttled-replica lists; INVALID_CONFIG on others), starting from the
effective value. The result is validated as a whole (unknown name or bad value: INVALID_CONFIG),
then persisted; validate_only checks without changing. A config key named twice in one resource
gives INVALID_REQUEST. A broker resource (this broker's id, or "" for the cluster default) gets the
operations applied to its dynamic set (broker/dynamic_keys.py: APPEND and SUBTRACT on Kafka's list
configs, starting from the stored value or Kafka's default), then stored as in AlterConfigs.
A broker-logger resource (8, named by this node's id) sets (SET) or unsets (DELETE: back to the
parent's level) the levels of the broker's loggers at run time, all or none: see
broker/log_levels.py for the names, levels and Kafka's checks. A group resource (32) gets SET and
DELETE on its own group configs (broker/group_configs.py); APPEND and SUBTRACT are INVALID_CONFIG.
A client-metrics resource (16) is INVALID_REQUEST saying that eosbroker has no client telemetry
(KIP-714), so keeps no such resource.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import incremental_alter

from .. import group_configs
from ..broker_configs import kafka_defaults
from ..dynamic_keys import incremental_broker_alter
from ..handler import Handler, RequestContext
from ..log_levels import apply_change, validate_change
from .alter_configs import alter_all

if TYPE_CHECKING:
    from protocol.request_types.incremental_alter_configs import AlterConfigsResource, IncrementalAlterConfigsRequest


async def handle(ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> object:
    defaults = ctx.broker.logs.topic_defaults()

    def compute(resource: AlterConfigsResource, current: Mapping[str, str]) -> dict[str, str]:
        twice = sorted(n for n, k in Counter(c.name for c in resource.configs).items() if k > 1)
        if twice:
            raise KafkaError(ErrorCode.invalid_request, f"duplicate config keys: {', '.join(twice)}")
        changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
        return incremental_alter(current, changes, defaults)

    def compute_broker(resource: AlterConfigsResource, current: Mapping[str, str]) -> dict[str, str]:
        changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
        return incremental_broker_alter(current, changes, kafka_defaults())

    def compute_group(resource: AlterConfigsResource, own: Mapping[str, str]) -> dict[str, str]:
        changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
        return group_configs.incremental(resource.resource_name, own, changes, ctx.broker.config)

    resources: Sequence[AlterConfigsResource] = request.resources  # one type for the versions' resources
    return await alter_all(ctx, resources, request.validate_only, compute, alter_loggers, compute_broker,
                           compute_group)


def alter_loggers(resource: AlterConfigsResource, validate_only: bool) -> None:
    changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
    for change in changes:
        validate_change(*change)
    if not validate_only:
        apply_change(changes)


HANDLER = Handler(api_key=ApiKey.INCREMENTAL_ALTER_CONFIGS, min_version=0, max_version=1, handle=handle)
