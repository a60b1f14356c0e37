"""DescribeAcls v1-3.

Behaviour: with no authorizer (authorizer.class.name unset) the answer is Kafka's: SECURITY_DISABLED
with "No Authorizer is configured on the broker", so kafka-acls and consoles report ACLs as off.
With one, the caller needs DESCRIBE on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED otherwise), and
the ACLs the filter matches come back grouped by resource pattern. A filter with an UNKNOWN field
is INVALID_REQUEST. Filters: a null name or principal or host, and ANY, match everything; pattern
type MATCH finds the ACLs that apply to the named resource (its literal, `*` and prefixes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .acl_common import acl_authorizer, filter_of

if TYPE_CHECKING:
    from protocol.request_types.describe_acls import DescribeAclsRequest


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> object:
    authorizer = acl_authorizer(ctx)
    require_cluster(ctx, AclOperation.DESCRIBE)
    acl_filter = filter_of(request)
    acl_filter.validate()
    resources: dict[tuple[int, str, int], list[dict[str, object]]] = {}
    for acl in authorizer.acls(acl_filter):
        resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission_type})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "resources": [
        {"resource_type": rtype, "resource_name": name, "pattern_type": pattern, "acls": acls}
        for (rtype, name, pattern), acls in resources.items()]})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_ACLS, min_version=1, max_version=3, handle=handle)
