"""InitializeShareGroupState v0 (KIP-932): a group coordinator sets share-partitions' start offsets
at their share coordinator (AlterShareGroupOffsets in cluster mode, broker/share_state_client.py).

Behaviour: each key starts again at the start offset given, with no record states, at the state
epoch given (coordinator/share/state_shards.py), appended to its __share_group_state partition
before the answer. A state epoch below the key's recorded one is FENCED_STATE_EPOCH, as in
Kafka's ShareCoordinatorShard; a negative one, partition or start offset INVALID_REQUEST; a key
whose shard is not led here NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
Requires CLUSTER_ACTION on the cluster (an inter-broker API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.state_log import SharePartitionKey
from coordinator.share.state_shards import ShareStateShards
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .read_share_group_state import outcome, per_key, state_shards

if TYPE_CHECKING:
    from kio.schema.initialize_share_group_state.v0.request import PartitionData

    from protocol.request_types.initialize_share_group_state import InitializeShareGroupStateRequest


async def _initialize(shards: ShareStateShards, key: SharePartitionKey, data: PartitionData) -> dict[str, object]:
    if key.partition < 0 or data.state_epoch < 0 or data.start_offset < -1:
        return {"partition": key.partition, "error_code": ErrorCode.invalid_request,
                "error_message": "Partition, state epoch and start offset may not be negative."}
    return await outcome(key, shards.initialize(key, data.state_epoch, data.start_offset))


async def handle(ctx: RequestContext, request: InitializeShareGroupStateRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)
    return ctx.respond({"results": await per_key(request, lambda key, p: _initialize(shards, key, p))})


HANDLER = Handler(api_key=ApiKey.INITIALIZE_SHARE_GROUP_STATE, min_version=0, max_version=0, handle=handle)
