"""ReadShareGroupStateSummary v0-1 (KIP-932): a group coordinator reads share-partitions' start
offsets from their share coordinator (DescribeShareGroupOffsets in cluster mode,
broker/share_state_client.py).

Behaviour: each key's state epoch, leader epoch and start offset as this broker's share
coordinator shard holds them, with no leader epoch check or update; a key with no state answers
start offset -1, state and leader epoch 0, as Kafka's share coordinator does. A key whose shard is
not led here is NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS. Requires
CLUSTER_ACTION on the cluster (an inter-broker API).
Version notes: v1 (KIP-1226) adds DeliveryCompleteCount: the offsets at or past the start offset
acknowledged or archived (-1 with no state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.state_log import SharePartitionKey, delivery_complete_count
from coordinator.share.state_shards import ShareStateShards
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .read_share_group_state import per_key, state_shards

if TYPE_CHECKING:
    from protocol.request_types.read_share_group_state_summary import ReadShareGroupStateSummaryRequest


def _summary(ctx: RequestContext, shards: ShareStateShards, key: SharePartitionKey) -> dict[str, object]:
    out: dict[str, object] = {"partition": key.partition, "error_code": ErrorCode.none, "error_message": None,
                              "state_epoch": 0, "leader_epoch": 0, "start_offset": -1}
    if ctx.version >= 1:
        out["delivery_complete_count"] = -1
    try:
        stored = shards.summary(key)
    except KafkaError as exc:
        return out | {"error_code": exc.code, "error_message": exc.message}
    if stored is None:
        return out
    out |= {"state_epoch": stored.state_epoch, "leader_epoch": stored.leader_epoch,
            "start_offset": stored.start_offset}
    if ctx.version >= 1:
        out["delivery_complete_count"] = delivery_complete_count(stored)
    return out


async def handle(ctx: RequestContext, request: ReadShareGroupStateSummaryRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)

    async def answer(key: SharePartitionKey, _: object) -> dict[str, object]:
        return _summary(ctx, shards, key)
    return ctx.respond({"results": await per_key(request, answer)})


HANDLER = Handler(api_key=ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, min_version=0, max_version=1, handle=handle)
