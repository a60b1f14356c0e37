"""DescribeCluster v0-1.

Behaviour: the live brokers; the controller is this broker (any broker changes topics, as
Metadata says). The Java admin client calls it first
in describeTopics (Spark's offset reader). v1 endpoint_type 1 (brokers) is the only type served.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.checks import cluster_operations
from ..handler import Handler, RequestContext
from .metadata import live_brokers


async def handle(ctx: RequestContext, request: Any) -> Any:
    if getattr(request, "endpoint_type", 1) != 1:
        return ctx.respond({"error_code": ErrorCode.unsupported_endpoint_type, "error_message":
                            "only broker endpoints (type 1) are served", "cluster_id": "", "controller_id": -1,
                            "brokers": [], "endpoint_type": request.endpoint_type})
    return ctx.respond({
        "throttle_time": 0, "error_code": ErrorCode.none, "cluster_id": ctx.broker.cluster_id,
        "controller_id": ctx.broker.node_id, "endpoint_type": 1,
        "brokers": [{"broker_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in live_brokers(ctx)],
        "cluster_authorized_operations": cluster_operations(ctx, request.include_cluster_authorized_operations),
    })


HANDLER = Handler(api_key=ApiKey.DESCRIBE_CLUSTER, min_version=0, max_version=1, handle=handle)
