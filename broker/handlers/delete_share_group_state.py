"""DeleteShareGroupState v0 (KIP-932): a group coordinator deletes share-partitions' states at their
share coordinator (DeleteShareGroupOffsets and DeleteGroups in cluster mode,
broker/share_state_client.py).

Behaviour: each key's state is tombstoned in its __share_group_state partition before the answer;
a key with no state succeeds too, as Kafka's share coordinator only logs it. A key whose shard is
not led here is NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS. Requires
CLUSTER_ACTION on the cluster (an inter-broker API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.state_log import SharePartitionKey
from coordinator.share.state_shards import ShareStateShards
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .read_share_group_state import state_shards

if TYPE_CHECKING:
    from protocol.request_types.delete_share_group_state import DeleteShareGroupStateRequest


async def _delete(shards: ShareStateShards, key: SharePartitionKey) -> dict[str, object]:
    try:
        await shards.write(key, None)
    except KafkaError as exc:
        return {"partition": key.partition, "error_code": exc.code, "error_message": exc.message}
    return {"partition": key.partition, "error_code": ErrorCode.none, "error_message": None}


async def handle(ctx: RequestContext, request: DeleteShareGroupStateRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)
    results = [{"topic_id": topic.topic_id, "partitions": [
        await _delete(shards, SharePartitionKey(request.group_id, topic.topic_id, p.partition))  # type: ignore[arg-type]
        for p in topic.partitions]} for topic in request.topics]
    return ctx.respond({"results": results})


HANDLER = Handler(api_key=ApiKey.DELETE_SHARE_GROUP_STATE, min_version=0, max_version=0, handle=handle)
