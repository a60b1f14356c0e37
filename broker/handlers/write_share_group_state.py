"""WriteShareGroupState v0 (KIP-932): a share-partition leader writes its state at the share
coordinator (cluster mode, broker/share_state_client.py).

Behaviour: each key's state is appended to its __share_group_state partition, led here, before
the answer (coordinator/share/state_shards.py); a key whose shard is not led here is
NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS, one whose leader epoch is below
the one recorded FENCED_LEADER_EPOCH (a stale share-partition leader's write). Requires
CLUSTER_ACTION on the cluster (an inter-broker API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.partition_state import RecordState, StateBatch
from coordinator.share.state_log import SharePartitionKey, StoredShareState
from coordinator.share.state_shards import ShareStateShards
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .read_share_group_state import outcome, per_key, state_shards

if TYPE_CHECKING:
    from kio.schema.write_share_group_state.v0.request import PartitionData

    from protocol.request_types.write_share_group_state import WriteShareGroupStateRequest


async def _write(shards: ShareStateShards, key: SharePartitionKey, data: PartitionData) -> dict[str, object]:
    try:
        batches = tuple(StateBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                        for b in data.state_batches)
    except ValueError as exc:
        return {"partition": key.partition, "error_code": ErrorCode.invalid_request, "error_message": str(exc)}
    return await outcome(key, shards.write(key, StoredShareState(data.state_epoch, data.start_offset, batches,
                                                                 data.leader_epoch)))


async def handle(ctx: RequestContext, request: WriteShareGroupStateRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)
    return ctx.respond({"results": await per_key(request, lambda key, p: _write(shards, key, p))})


HANDLER = Handler(api_key=ApiKey.WRITE_SHARE_GROUP_STATE, min_version=0, max_version=0, handle=handle)
