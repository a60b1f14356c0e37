"""DescribeAcls v1-3.

Behaviour: eosbroker has no authorizer, so it answers as Kafka does when authorizer.class.name is
unset: SECURITY_DISABLED with "No Authorizer is configured on the broker". Admin tools and UIs (kafka-acls,
confluent-kafka's describe_acls, web consoles) then report that ACLs are off instead of failing
on an unsupported API.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..handler import Handler, RequestContext

# Kafka 4.x's wording (AclApis), which kafka-acls --list prints.
NO_AUTHORIZER = "No Authorizer is configured on the broker"


async def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.security_disabled,
                        "error_message": NO_AUTHORIZER, "resources": []})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_ACLS, min_version=1, max_version=3, handle=handle)
