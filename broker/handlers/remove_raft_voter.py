"""RemoveRaftVoter v0.

Behaviour: refused as for AddRaftVoter (broker/handlers/add_raft_voter.py): the one voter cannot be
removed; kafka-metadata-quorum remove-controller gets Kafka 4.4's UNSUPPORTED_VERSION "Cluster
doesn't support removing voter because the kraft.version feature is 0", after its checks of the
cluster id and the voter's directory id ("Remove voter request didn't include a valid voter").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey

from ..handler import Handler, RequestContext
from .add_raft_voter import refuse_voter_change

if TYPE_CHECKING:
    from protocol.request_types.remove_raft_voter import RemoveRaftVoterRequest


async def handle(ctx: RequestContext, request: RemoveRaftVoterRequest) -> object:
    return refuse_voter_change(ctx, request, "removing")


HANDLER = Handler(api_key=ApiKey.REMOVE_RAFT_VOTER, min_version=0, max_version=0, handle=handle)
