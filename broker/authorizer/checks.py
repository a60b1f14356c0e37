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

__all__ = ("AUTHORIZATION_ERRORS", "authorized", "authorized_for_type", "denied", "denied_message",
           "require", "require_cluster", "unauthorized")

audit = logging.getLogger("kafka.authorizer.logger")

AUTHORIZATION_ERRORS: Final = {
    ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
    ResourceType.GROUP: ErrorCode.group_authorization_failed,
    ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed,
}
_NOTHING: Final[frozenset[str]] = frozenset()


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
        return _NOTHING
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


def _audit(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> None:
    if audit.isEnabledFor(logging.INFO):
        audit.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                   ctx.session.principal, operation.name, ctx.session.client_host,
                   resource_type.name.title().replace("_", ""), name)
