"""CreateAcls v1-3.

Behaviour: with no authorizer every creation fails with SECURITY_DISABLED, as in Kafka without
authorizer.class.name. With one, the caller needs ALTER on the CLUSTER (every creation fails with
CLUSTER_AUTHORIZATION_FAILED otherwise); each creation is validated on its own (Kafka's
AclControlManager and AclApis: INVALID_REQUEST for an UNKNOWN or ANY field, a MATCH pattern, an
empty name, a CLUSTER name other than kafka-cluster, a principal not of the form Type:name, or a
delegation token resource, which eosbroker does not have) and the valid ones are stored together,
durably, before the response. Creating an ACL that exists succeeds and keeps one copy.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclBinding
from ..handler import Handler, RequestContext
from .acl_common import acl_change, binding_of

if TYPE_CHECKING:
    from protocol.request_types.create_acls import AclCreation, CreateAclsRequest

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> object:
    creations: Sequence[AclCreation] = request.creations  # one type over the versions' tuples
    authorizer, outcomes, valid = acl_change(ctx, creations, binding_of)
    if valid:
        try:
            await authorizer.create_acls(valid)
            log.info("%s created ACLs: %s", ctx.session.principal, ", ".join(map(str, valid)))
        except KafkaError as exc:
            outcomes = [exc if isinstance(o, AclBinding) else o for o in outcomes]
    return ctx.respond({"throttle_time": 0, "results": [_result(o) for o in outcomes]})


def _result(outcome: AclBinding | KafkaError) -> dict[str, object]:
    if isinstance(outcome, KafkaError):
        return {"error_code": outcome.code, "error_message": outcome.message}
    return {"error_code": ErrorCode.none, "error_message": None}


HANDLER = Handler(api_key=ApiKey.CREATE_ACLS, min_version=1, max_version=3, handle=handle)
