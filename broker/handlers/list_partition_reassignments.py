"""ListPartitionReassignments v0.

Behaviour: eosbroker never moves a replica (see alter_partition_reassignments.py), so
no reassignment is ever ongoing: the answer lists none, for every topic or the named ones
(kafka-reassign-partitions --list prints "No partition reassignments found.", as on an idle Kafka).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.list_partition_reassignments import ListPartitionReassignmentsRequest


async def handle(ctx: RequestContext, request: ListPartitionReassignmentsRequest) -> object:
    require_cluster(ctx, AclOperation.DESCRIBE)
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": []})


HANDLER = Handler(api_key=ApiKey.LIST_PARTITION_REASSIGNMENTS, min_version=0, max_version=0, handle=handle)
