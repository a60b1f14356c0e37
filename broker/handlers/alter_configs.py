"""AlterConfigs v0-2.

Behaviour: a topic resource (type 2) gets exactly the configs in the request as its own; any it
had before and the request leaves out fall back to the broker default, as Kafka's legacy
AlterConfigs replaces the whole set. Names and values are validated as CreateTopics does (unknown
name or bad value: INVALID_CONFIG; null value: INVALID_REQUEST) and persisted in topics.json.
validate_only checks without changing. A broker resource (type 4) named by this broker's id or ""
(the cluster default) gets exactly the configs in the request as its dynamic set, if Kafka allows
each to change at run time (broker/dynamic_keys.py; else INVALID_REQUEST with Kafka's message);
broker/dynamic_config.py stores and applies it. A group resource (type 32) gets exactly the
request's configs as its own group configs (broker/group_configs.py: Kafka's keys and checks).
Broker-logger resources are refused (as Kafka,
whose legacy AlterConfigs cannot change levels; IncrementalAlterConfigs does). A resource named
twice gives INVALID_REQUEST for each.
Version notes: v1 and v2 only differ in throttling and flexible encoding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from .. import group_configs
from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_config_access
from ..handler import Handler, RequestContext
from .describe_configs import CLIENT_METRICS, NO_CLIENT_METRICS

if TYPE_CHECKING:
    from protocol.request_types.alter_configs import AlterConfigsRequest, AlterConfigsResource

__all__ = ("HANDLER", "alter_all")

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, group_configs.GROUP



class _Config(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class ConfigResource(Protocol):
    """A resource of AlterConfigs or IncrementalAlterConfigs (their configs differ beyond these)."""

    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configs(self) -> Sequence[_Config]: ...


R = TypeVar("R", bound=ConfigResource)


# (resource, current own configs: the topic's, the broker's dynamic set or the group's) -> the new ones
Compute = Callable[[R, Mapping[str, str]], dict[str, str]]
# (broker-logger resource, validate_only): change the levels, or raise KafkaError
AlterLoggers = Callable[[R, bool], None]


def _refuse_loggers(resource: ConfigResource, validate_only: bool) -> None:
    raise KafkaError(ErrorCode.invalid_request, "AlterConfigs cannot change log levels: use IncrementalAlterConfigs "
                                                "(kafka-configs --alter --entity-type broker-loggers)")


def check_broker_name(ctx: RequestContext, name: str) -> None:
    """ConfigAdminManager.validateResourceNameIsCurrentNodeId, "" (the cluster default) aside."""
    if name == "":
        return
    try:
        node_id = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.invalid_request, f"Node id must be an integer, but it is: {name}") from None
    if node_id != ctx.broker.node_id:
        raise KafkaError(ErrorCode.invalid_request,
                         f"Unexpected broker id, expected {ctx.broker.node_id}, but received {name}")


async def _alter_broker(ctx: RequestContext, resource: R, compute: Compute[R], validate_only: bool) -> None:
    check_broker_name(ctx, resource.resource_name)
    twice = sorted(n for n, k in Counter(c.name for c in resource.configs).items() if k > 1)
    if twice:
        raise KafkaError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    dynamic = ctx.broker.dynamic_config
    if dynamic is None:
        raise KafkaError(ErrorCode.invalid_request, "dynamic broker configs are not loaded yet")
    await dynamic.alter(resource.resource_name, lambda current: compute(resource, current), validate_only)


def _replace_broker(resource: ConfigResource, current: Mapping[str, str]) -> dict[str, str]:
    nulls = [c.name for c in resource.configs if c.value is None]
    if nulls:
        raise KafkaError(ErrorCode.invalid_request, f"Null value not supported for : {', '.join(nulls)}")
    return {c.name: c.value for c in resource.configs if c.value is not None}


async def _alter_one(ctx: RequestContext, resource: R, compute: Compute[R], validate_only: bool,
                     alter_loggers: AlterLoggers[R], compute_broker: Compute[R], compute_group: Compute[R]) -> None:
    kind = resource.resource_type
    require_config_access(ctx, AclOperation.ALTER_CONFIGS, kind, resource.resource_name)
    if kind == BROKER_LOGGER:
        if resource.resource_name != str(ctx.broker.node_id):
            raise KafkaError(ErrorCode.invalid_request, f"Unexpected broker id, expected {ctx.broker.node_id}, "
                                                        f"but received {resource.resource_name}")
        alter_loggers(resource, validate_only)
        return
    if kind == BROKER:
        await _alter_broker(ctx, resource, compute_broker, validate_only)
        return
    if kind == GROUP:
        dynamic = ctx.broker.dynamic_config
        if dynamic is None:
            raise KafkaError(ErrorCode.invalid_request, "dynamic configs are not loaded yet")
        await dynamic.alter_group(resource.resource_name, lambda own: compute_group(resource, own), validate_only)
        return
    if kind == CLIENT_METRICS:
        raise KafkaError(ErrorCode.invalid_request, f"{NO_CLIENT_METRICS}; nothing was changed")
    if kind != TOPIC:
        raise KafkaError(ErrorCode.invalid_request, f"resource type {kind} is not supported")
    logs = ctx.broker.logs
    meta = logs.topics.get(resource.resource_name)
    if meta is None:
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"topic {resource.resource_name!r} does not exist")
    await logs.alter_configs(meta.name, compute(resource, meta.configs), validate_only=validate_only)


async def alter_all(ctx: RequestContext, resources: Sequence[R], validate_only: bool, compute: Compute[R],
                    alter_loggers: AlterLoggers[R] = _refuse_loggers, compute_broker: Compute[R] = _replace_broker,
                    compute_group: Compute[R] | None = None) -> object:
    """Apply compute to each topic resource of an (Incremental)AlterConfigs request,
    compute_broker to each broker resource, compute_group to each group one and alter_loggers to
    each broker-logger one, and answer."""
    if compute_group is None:
        def compute_group(resource: R, own: Mapping[str, str]) -> dict[str, str]:
            return group_configs.replace(resource.resource_name, {c.name: c.value for c in resource.configs},
                                         ctx.broker.config)
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    responses = []
    for resource in resources:
        entry: dict[str, object] = {"resource_type": resource.resource_type, "resource_name": resource.resource_name,
                                 "error_code": ErrorCode.none, "error_message": None}
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise KafkaError(ErrorCode.invalid_request, f"resource {resource.resource_name!r} is named twice")
            await _alter_one(ctx, resource, compute, validate_only, alter_loggers, compute_broker,
                             compute_group)
        except KafkaError as exc:
            entry |= {"error_code": exc.code, "error_message": exc.message}
        responses.append(entry)
    return ctx.respond({"throttle_time": 0, "responses": responses})


def _replace(resource: AlterConfigsResource, current: Mapping[str, str]) -> dict[str, str]:
    new: dict[str, str | None] = {c.name: c.value for c in resource.configs}
    nulls = sorted(name for name, value in new.items() if value is None)
    if nulls:
        raise KafkaError(ErrorCode.invalid_request, f"null value not supported for topic configs: {', '.join(nulls)}")
    return {name: value for name, value in new.items() if value is not None}


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> object:
    resources: Sequence[AlterConfigsResource] = request.resources  # one type for the versions' resources
    return await alter_all(ctx, resources, request.validate_only, _replace)


HANDLER = Handler(api_key=ApiKey.ALTER_CONFIGS, min_version=0, max_version=2, handle=handle)
