"""UnregisterBroker v0.

Behaviour: as Kafka 4.4's controller answers kafka-cluster unregister (the broker forwards it
there): a broker id the cluster has no registration for is BROKER_ID_NOT_REGISTERED, "Broker ID
<id> is not currently registered". In cluster mode a fenced broker (registered, its lease lapsed:
killed or shut down) has its registration removed, so DescribeCluster lists it no more. Unlike
Kafka, which unregisters a live broker that then registers again, a live broker (on a single
node: this one) is refused with INVALID_REQUEST saying so: its registration is its running
process's lease, which its next heartbeat would renew. Needs ALTER on the CLUSTER.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import Unregistered

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.unregister_broker import UnregisterBrokerRequest


def _refusal(node_id: int, outcome: Unregistered) -> tuple[ErrorCode, str | None]:
    match outcome:
        case Unregistered.REMOVED:
            return ErrorCode.none, None
        case Unregistered.NOT_REGISTERED:
            return ErrorCode.broker_id_not_registered, f"Broker ID {node_id} is not currently registered"
        case Unregistered.LIVE:
            return ErrorCode.invalid_request, (f"Broker ID {node_id} is running: a live broker stays registered; "
                                               "stop it first, then unregister it")


async def handle(ctx: RequestContext, request: UnregisterBrokerRequest) -> object:
    try:
        require_cluster(ctx, AclOperation.ALTER)
        code, message = _refusal(request.broker_id, await ctx.broker.cluster.unregister(request.broker_id))
    except KafkaError as exc:
        code, message = exc.code, exc.message
    return ctx.respond({"throttle_time": 0, "error_code": code, "error_message": message})


HANDLER = Handler(api_key=ApiKey.UNREGISTER_BROKER, min_version=0, max_version=0, handle=handle)
