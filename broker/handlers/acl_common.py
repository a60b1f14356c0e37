"""What CreateAcls, DescribeAcls and DeleteAcls share: the wire's ACL fields as typed values."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, TypeVar

from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_enum,
)
from ..authorizer.checks import require_cluster
from ..handler import RequestContext

if TYPE_CHECKING:
    from protocol.request_types.create_acls import AclCreation
    from protocol.request_types.delete_acls import DeleteAclsFilter
    from protocol.request_types.describe_acls import DescribeAclsRequest

    from ..authorizer.standard import StandardAuthorizer

__all__ = ("NO_AUTHORIZER", "acl_authorizer", "acl_change", "binding_fields", "binding_of", "filter_of", "validated")

# Kafka 4.x's wording (AclApis), which kafka-acls --list prints.
NO_AUTHORIZER: Final = "No Authorizer is configured on the broker"
V = TypeVar("V", AclBinding, AclBindingFilter)
W = TypeVar("W")  # a wire item: a creation or a filter


def acl_authorizer(ctx: RequestContext) -> StandardAuthorizer:
    """The authorizer the ACL APIs work on. Without one the whole request is SECURITY_DISABLED
    (every creation or filter, or DescribeAcls' top level, carries it), as Kafka answers."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        raise KafkaError(ErrorCode.security_disabled, NO_AUTHORIZER)
    return authorizer


def acl_change(ctx: RequestContext, items: Iterable[W],
               convert: Callable[[W], V]) -> tuple[StandardAuthorizer, list[V | KafkaError], list[V]]:
    """What CreateAcls and DeleteAcls start with: the authorizer, ALTER on the cluster (the
    whole request fails without it), each item as a typed value or its own error, and the valid."""
    authorizer = acl_authorizer(ctx)
    require_cluster(ctx, AclOperation.ALTER)
    outcomes = validated(items, convert)
    return authorizer, outcomes, [o for o in outcomes if not isinstance(o, KafkaError)]


def validated(items: Iterable[W], convert: Callable[[W], V]) -> list[V | KafkaError]:
    """Each wire item as a typed value, or the INVALID_REQUEST it earns on its own (Kafka
    answers per creation and per filter, so one bad item does not fail the others)."""
    out: list[V | KafkaError] = []
    for item in items:
        value = convert(item)
        try:
            value.validate()
        except KafkaError as exc:
            out.append(exc)
            continue
        out.append(value)
    return out


def binding_of(creation: AclCreation) -> AclBinding:
    return AclBinding(
        resource_type=parse_enum(ResourceType, creation.resource_type), resource_name=creation.resource_name,
        pattern_type=parse_enum(PatternType, creation.resource_pattern_type), principal=creation.principal,
        host=creation.host, operation=parse_enum(AclOperation, creation.operation),
        permission_type=parse_enum(AclPermissionType, creation.permission_type))


def filter_of(request: DescribeAclsRequest | DeleteAclsFilter) -> AclBindingFilter:
    """A DescribeAclsRequest or one DeleteAclsFilter, which have the same fields."""
    return AclBindingFilter(
        resource_type=parse_enum(ResourceType, request.resource_type_filter),
        resource_name=request.resource_name_filter,
        pattern_type=parse_enum(PatternType, request.pattern_type_filter), principal=request.principal_filter,
        host=request.host_filter, operation=parse_enum(AclOperation, request.operation),
        permission_type=parse_enum(AclPermissionType, request.permission_type))


def binding_fields(acl: AclBinding) -> dict[str, object]:
    """A DeleteAclsMatchingAcl's ACL fields (DescribeAcls groups the same ones by resource)."""
    return {"resource_type": acl.resource_type, "resource_name": acl.resource_name, "pattern_type": acl.pattern_type,
            "principal": acl.principal, "host": acl.host, "operation": acl.operation,
            "permission_type": acl.permission_type}
