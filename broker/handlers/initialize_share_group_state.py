"""InitializeShareGroupState v0 (KIP-932): a group coordinator sets share-partitions' start offsets
at their share coordinator (AlterShareGroupOffsets in cluster mode, broker/share_state_client.py).

Behaviour: each key starts again at the start offset given, with no record states, at the state
epoch given (coordinator/share/state_shards.py), appended to its __share_group_state partition
before the answer. A state epoch below the key's recorded one is FENCED_STATE_EPOCH, as in
Kafka's ShareCoordinatorShard; no topic id, a negative partition or state epoch INVALID_REQUEST
(with Kafka's messages; checked side by side with a 4.4 node); a key
whose shard is not led here NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
Requires CLUSTER_ACTION on the cluster (an inter-broker API).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final

from coordinator.share.state_log import SharePartitionKey
from coordinator.share.state_shards import ShareStateShards
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .read_share_group_state import outcome, per_key, state_shards

ZERO_UUID: Final = uuid.UUID(int=0)

if TYPE_CHECKING:
    from kio.schema.initialize_share_group_state.v0.request import PartitionData

    from protocol.request_types.initialize_share_group_state import InitializeShareGroupStateRequest


async def _initialize(shards: ShareStateShards, key: SharePartitionKey, data: PartitionData) -> dict[str, object]:
    invalid = _invalid(key, data.state_epoch)
    if invalid is not None:
        return {"partition": key.partition, "error_code": ErrorCode.invalid_request, "error_message": invalid}
    return await outcome(key, shards.initialize(key, data.state_epoch, data.start_offset))


def _invalid(key: SharePartitionKey, state_epoch: int) -> str | None:
    """Kafka's ShareCoordinatorShard checks, with its messages."""
    if key.topic_id in (None, ZERO_UUID):  # kio reads Kafka's null (zero) uuid as None
        return "The topic id cannot be null."
    if key.partition < 0:
        return "The partition id cannot be a negative number."
    return "The state epoch cannot be a negative number." if state_epoch < 0 else None


async def handle(ctx: RequestContext, request: InitializeShareGroupStateRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)
    return ctx.respond({"results": await per_key(request, lambda key, p: _initialize(shards, key, p))})


HANDLER = Handler(api_key=ApiKey.INITIALIZE_SHARE_GROUP_STATE, min_version=0, max_version=0, handle=handle)
