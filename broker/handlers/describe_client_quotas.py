"""DescribeClientQuotas v0-1.

Behaviour: the quotas set with AlterClientQuotas (broker/quotas) whose entity matches the filter,
as Kafka's ClientQuotasImage matches it: each component names an entity type and a name (exact),
the default entity (default) or any name (specified); `strict` also wants no other entity types.
A filter Kafka refuses (a type twice, an exact match without a name, ip with user or client-id,
an unknown match type) is INVALID_REQUEST with Kafka's message; an unknown entity type
UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from ..quotas.entities import filter_of, matches

if TYPE_CHECKING:
    from protocol.request_types.describe_client_quotas import DescribeClientQuotasRequest


async def handle(ctx: RequestContext, request: DescribeClientQuotasRequest) -> object:
    require_cluster(ctx, AclOperation.DESCRIBE_CONFIGS)
    exact, typed = filter_of(request.components)
    quotas = ctx.broker.quotas
    found = [] if quotas is None else [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "values": [{"key": k, "value": v} for k, v in sorted(values.items())]}
        for entity, values in sorted(quotas.entries.items(), key=lambda item: str(item[0]))
        if matches(entity, exact, typed, request.strict)
    ]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "entries": found})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_CLIENT_QUOTAS, min_version=0, max_version=1, handle=handle)
