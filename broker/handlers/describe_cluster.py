"""DescribeCluster v0-2.

Behaviour: the live brokers; the controller is this broker (any broker changes topics, as
Metadata says). The Java admin client calls it first
in describeTopics (Spark's offset reader). v1 endpoint_type 1 (brokers) is the only type served: as a
Kafka 4.4 broker answers, type 2 (controllers, --bootstrap-controller) is MISMATCHED_ENDPOINT_TYPE and
any other UNSUPPORTED_ENDPOINT_TYPE, each saying so, with endpoint_type 1.
Fenced brokers (KIP-1073) are those the cluster knows but that may not serve: in cluster mode a
registered broker whose lease lapsed (killed, paused past its lease, or shut down: its row stays,
as a Kafka broker stays registered, fenced, after it stops), never this broker; a single node has none.
Version notes: v2 adds include_fenced_brokers, which adds them, and is_fenced on each broker; as
KafkaApis answers, a fenced broker is listed only when asked for, and no broker is fenced before v2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.build import field_or
from protocol.errors import ErrorCode

from ..authorizer.checks import cluster_operations
from ..handler import Handler, RequestContext
from .metadata import live_brokers, on_listener

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.describe_cluster import DescribeClusterRequest, DescribeClusterRequestV1Plus


def _is_v1_plus(entity: DescribeClusterRequest) -> TypeIs[DescribeClusterRequestV1Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 1

_BROKERS: Final = 1
_CONTROLLERS: Final = 2


def _brokers(ctx: RequestContext, include_fenced: bool) -> list[dict[str, object]]:
    brokers = [(b, False) for b in live_brokers(ctx)]
    if include_fenced:
        live = {b.node_id for b, _ in brokers}
        fenced = [b for b in ctx.broker.cluster.fenced_brokers() if b.node_id not in live]
        brokers += [(b, True) for b in on_listener(ctx, fenced)]
    return [{"broker_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack, "is_fenced": fenced}
            for b, fenced in sorted(brokers, key=lambda entry: entry[0].node_id)]


def _wrong_endpoint(endpoint_type: int) -> tuple[ErrorCode, str]:
    """Kafka 4.4's broker answers: a client bootstrapped with --bootstrap-controller asks for type 2."""
    if endpoint_type == _CONTROLLERS:
        return (ErrorCode.mismatched_endpoint_type,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
    return ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {endpoint_type}"


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> object:
    if _is_v1_plus(request) and request.endpoint_type != _BROKERS:
        code, message = _wrong_endpoint(request.endpoint_type)
        return ctx.respond({"error_code": code, "error_message": message, "cluster_id": "", "controller_id": -1,
                            "brokers": [], "endpoint_type": _BROKERS})
    return ctx.respond({
        "throttle_time": 0, "error_code": ErrorCode.none, "cluster_id": ctx.broker.cluster_id,
        "controller_id": ctx.broker.node_id, "endpoint_type": _BROKERS,
        "brokers": _brokers(ctx, field_or(request, "include_fenced_brokers", False)),
        "cluster_authorized_operations": cluster_operations(ctx, request.include_cluster_authorized_operations),
    })


HANDLER = Handler(api_key=ApiKey.DESCRIBE_CLUSTER, min_version=0, max_version=2, handle=handle)
