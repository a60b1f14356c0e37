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

from protocol.api_keys import ApiKey

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .read_share_group_state import outcome, per_key, state_shards

if TYPE_CHECKING:
    from protocol.request_types.delete_share_group_state import DeleteShareGroupStateRequest


async def handle(ctx: RequestContext, request: DeleteShareGroupStateRequest) -> object:
    require_cluster(ctx, AclOperation.CLUSTER_ACTION)
    shards = state_shards(ctx)
    return ctx.respond({"results": await per_key(request, lambda key, p: outcome(key, shards.write(key, None)))})


HANDLER = Handler(api_key=ApiKey.DELETE_SHARE_GROUP_STATE, min_version=0, max_version=0, handle=handle)
