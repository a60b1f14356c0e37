"""DeleteAcls v1-3.

Behaviour: with no authorizer every filter fails with SECURITY_DISABLED and matches nothing, as in
Kafka without authorizer.class.name. With one, the caller needs ALTER on the CLUSTER
(CLUSTER_AUTHORIZATION_FAILED for every filter otherwise); each filter removes the ACLs it matches
(the same matching as DescribeAcls, MATCH included) and lists them; a filter with an UNKNOWN field
is INVALID_REQUEST on its own. The removals are stored together, durably, before the response.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..handler import Handler, RequestContext
from .acl_common import acl_change, binding_fields, filter_of

if TYPE_CHECKING:
    from protocol.request_types.delete_acls import DeleteAclsFilter, DeleteAclsRequest

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> object:
    filters: Sequence[DeleteAclsFilter] = request.filters  # one type over the versions' tuples
    authorizer, outcomes, valid = acl_change(ctx, filters, filter_of)
    removed = iter(await authorizer.delete_acls(valid)) if valid else iter(())
    results: list[dict[str, object]] = []
    for outcome in outcomes:
        if isinstance(outcome, KafkaError):
            results.append({"error_code": outcome.code, "error_message": outcome.message, "matching_acls": []})
            continue
        acls = next(removed)
        if acls:
            log.info("%s deleted ACLs: %s", ctx.session.principal, ", ".join(map(str, acls)))
        results.append({"error_code": ErrorCode.none, "error_message": None, "matching_acls": [
            {"error_code": ErrorCode.none, "error_message": None, **binding_fields(acl)} for acl in acls]})
    return ctx.respond({"throttle_time": 0, "filter_results": results})


HANDLER = Handler(api_key=ApiKey.DELETE_ACLS, min_version=1, max_version=3, handle=handle)
