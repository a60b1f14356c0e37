"""What handlers ask the authorizer, in one place (Kafka's AuthHelper).

Every function answers "allowed" at the cost of one attribute test when no authorizer is
configured, so the request path of a broker without authorizer.class.name pays nothing more.
A refusal carries Kafka's error code for the resource type and a message naming the principal,
the operation and the resource; refusals of explicit requests are logged at INFO on
`kafka.authorizer.logger` (Kafka's audit logger name, which operators route to their audit files).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from protocol.errors import ErrorCode, KafkaError

from .acl import CLUSTER_NAME, AclOperation, ResourceType

if TYPE_CHECKING:
    from ..handler import RequestContext

__all__ = ("AUTHORIZATION_ERRORS", "NOTHING", "NOT_REQUESTED", "authorized", "authorized_for_type",
           "authorized_operations", "cluster_operations", "denied", "denied_message", "may_create_topic", "require",
           "require_cluster", "require_config_access", "require_idempotent_write", "unauthorized")

audit = logging.getLogger("kafka.authorizer.logger")

AUTHORIZATION_ERRORS: Final = {
    ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
    ResourceType.GROUP: ErrorCode.group_authorization_failed,
    ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed,
}
# No name refused: what the filters answer without an authorizer.
NOTHING: Final[frozenset[str]] = frozenset()
# What an *_authorized_operations field holds when the request did not ask for it (Kafka's default).
NOT_REQUESTED: Final = -2147483648
# Kafka's ConfigResource.Type codes -> the ACL resource that guards those configs (ConfigHelper):
# a topic's own, a group's own, and the CLUSTER for the broker's and its loggers'.
_CONFIG_GUARDS: Final = {2: (ResourceType.TOPIC, None), 32: (ResourceType.GROUP, None),
                         4: (ResourceType.CLUSTER, CLUSTER_NAME), 8: (ResourceType.CLUSTER, CLUSTER_NAME)}


def authorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str,
               *, log_denied: bool = True) -> bool:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    session = ctx.session
    if authorizer.authorize(str(session.principal), session.client_host, operation, resource_type, name):
        return True
    if log_denied:
        _audit(ctx, operation, resource_type, name)
    return False


def unauthorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType,
                 names: Iterable[str], *, log_denied: bool = True) -> frozenset[str]:
    """The names among `names` the caller may not `operation` (each distinct name decided once)."""
    if ctx.broker.authorizer is None:
        return NOTHING
    return frozenset(name for name in set(names)
                     if not authorized(ctx, operation, resource_type, name, log_denied=log_denied))


def authorized_for_type(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
    """Whether the caller may `operation` some resource of the type (Kafka's authorizeByResourceType)."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    session = ctx.session
    return authorizer.authorize_by_resource_type(str(session.principal), session.client_host, operation,
                                                 resource_type)


def denied_message(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> str:
    return (f"Principal {ctx.session.principal} is not authorized to {operation.name} "
            f"{resource_type.name} {name!r}")


def denied(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> KafkaError:
    return KafkaError(AUTHORIZATION_ERRORS[resource_type], denied_message(ctx, operation, resource_type, name))


def require(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> None:
    """Raises the resource type's *_AUTHORIZATION_FAILED unless the caller may `operation` it."""
    if not authorized(ctx, operation, resource_type, name):
        raise denied(ctx, operation, resource_type, name)


def require_cluster(ctx: RequestContext, operation: AclOperation) -> None:
    """Kafka's AuthHelper.authorizeClusterOperation: the whole request fails without it."""
    require(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def require_config_access(ctx: RequestContext, operation: AclOperation, config_type: int, name: str) -> None:
    """DESCRIBE_CONFIGS or ALTER_CONFIGS on what guards a config resource (other types are left to
    the handler, which refuses them)."""
    guard = _CONFIG_GUARDS.get(config_type)
    if guard is not None:
        resource_type, fixed_name = guard
        require(ctx, operation, resource_type, fixed_name or name)


# Kafka's AclEntry.supportedOperations: what authorized_operations fields report on, per type.
_SUPPORTED_OPERATIONS: Final = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
}


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """Kafka's AuthHelper.authorizedOperations: a bit (1 << code) per supported operation the
    caller may perform (all of them without an authorizer), for the *_authorized_operations fields."""
    bits = 0
    for operation in _SUPPORTED_OPERATIONS[resource_type]:
        if authorized(ctx, operation, resource_type, name, log_denied=False):
            bits |= 1 << operation
    return bits


def cluster_operations(ctx: RequestContext, requested: bool) -> int:
    """Metadata's and DescribeCluster's cluster_authorized_operations, as Kafka fills them: only when
    asked, and 0 for a caller who may not DESCRIBE the CLUSTER."""
    if not requested:
        return NOT_REQUESTED
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    """CreateTopics' and Metadata auto-creation's rule: CREATE on the CLUSTER, else on the topic."""
    return (authorized(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
            or authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, name))


def require_idempotent_write(ctx: RequestContext) -> None:
    """InitProducerId without a transactional id (Kafka 3+): IDEMPOTENT_WRITE on the CLUSTER, or
    WRITE on some topic (KIP-679 made idempotence the producer default, so WRITE alone suffices)."""
    if authorized(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        return
    if not authorized_for_type(ctx, AclOperation.WRITE, ResourceType.TOPIC):
        _audit(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
        raise KafkaError(ErrorCode.cluster_authorization_failed,
                         f"Principal {ctx.session.principal} may neither IDEMPOTENT_WRITE on the CLUSTER "
                         "nor WRITE to any topic, so it cannot get a producer id")


def _audit(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> None:
    if audit.isEnabledFor(logging.INFO):
        audit.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                   ctx.session.principal, operation.name, ctx.session.client_host,
                   resource_type.name.title().replace("_", ""), name)
