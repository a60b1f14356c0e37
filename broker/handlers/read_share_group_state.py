"""ReadShareGroupState v0 (KIP-932): a share-partition leader reads its state from the share
coordinator (cluster mode, broker/share_state_client.py).

Behaviour: each key's state as this broker's share coordinator shard holds it
(coordinator/share/state_shards.py); a key never initialized is INVALID_REQUEST "Read operation
on uninitialized share partition not allowed.", as Kafka's share coordinator answers it; one whose
shard is not led here NOT_COORDINATOR, still loading COORDINATOR_LOAD_IN_PROGRESS. A leader epoch below the one
recorded for the share-partition is FENCED_LEADER_EPOCH; a higher one is recorded. Requires
CLUSTER_ACTION on the cluster (an inter-broker API).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from coordinator.share.state_log import SharePartitionKey
from coordinator.share.state_shards import ShareStateShards
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.read_share_group_state import ReadShareGroupStateRequest


def per_key(request: Any, answer: Callable[[SharePartitionKey, Any], Awaitable[dict[str, object]]],
            ) -> Awaitable[list[dict[str, object]]]:
    """The results of a share state request (Read/Write/Initialize/Delete/ReadSummary): each
    topic's partitions answered in order, by key."""
    async def results() -> list[dict[str, object]]:
        return [{"topic_id": topic.topic_id, "partitions": [
            await answer(SharePartitionKey(request.group_id, topic.topic_id, p.partition), p)
            for p in topic.partitions]} for topic in request.topics]
    return results()


async def outcome(key: SharePartitionKey, change: Awaitable[None]) -> dict[str, object]:
    """A partition's result of a state change (Write/Initialize/Delete): its error, if any."""
    try:
        await change
    except KafkaError as exc:
        return {"partition": key.partition, "error_code": exc.code, "error_message": exc.message}
    return {"partition": key.partition, "error_code": ErrorCode.none, "error_message": None}


def state_shards(ctx: RequestContext) -> ShareStateShards:
    shards = ctx.broker.share_state_shards
    if shards is None:
        raise KafkaError(ErrorCode.not_coordinator, "this broker runs no share coordinator (it is not in a cluster)")
    return shards


async def _partition(shards: ShareStateShards, key: SharePartitionKey, leader_epoch: int) -> dict[str, object]:
    # an error leaves the schema's zeros, as Kafka's ReadShareGroupStateResponse.toErrorResponseData does
    out: dict[str, object] = {"partition": key.partition, "error_code": ErrorCode.none, "error_message": None,
                           "state_epoch": 0, "start_offset": 0, "state_batches": []}
    try:
        stored = await shards.read(key, leader_epoch)
    except KafkaError as exc:
        return out | {"error_code": exc.code, "error_message": exc.message}
    batches = [{"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": int(b.state),
                "delivery_count": b.delivery_count} for b in stored.batches]
    return out | {"state_epoch": stored.state_epoch, "start_offset": stored.start_offset, "state_batches": batches}


async def handle(ctx: RequestContext, request: ReadShareGroupStateRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)
    return ctx.respond({"results": await per_key(request, lambda key, p: _partition(shards, key, p.leader_epoch))})


HANDLER = Handler(api_key=ApiKey.READ_SHARE_GROUP_STATE, min_version=0, max_version=0, handle=handle)
