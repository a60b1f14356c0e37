"""AddRaftVoter v0-1.

Behaviour: refused as Kafka 4.4 refuses it for a quorum of static voters (kraft.version 0): eosbroker's
quorum is the one voter DescribeQuorum names and cannot change (it has no Raft log), so
kafka-metadata-quorum add-controller gets UNSUPPORTED_VERSION "Cluster doesn't support adding voter
because the kraft.version feature is 0". Checked first, in KafkaRaftClient's order: a cluster id
other than this cluster's is INCONSISTENT_CLUSTER_ID, a voter without a directory id INVALID_REQUEST
("Add voter request didn't include a valid voter"). Needs ALTER on the CLUSTER.
Version notes: v1 adds ack_when_committed, which changes nothing here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.add_raft_voter import AddRaftVoterRequest
    from protocol.request_types.remove_raft_voter import RemoveRaftVoterRequest


def refuse_voter_change(ctx: RequestContext, request: AddRaftVoterRequest | RemoveRaftVoterRequest, verb: str,
                        ) -> object:
    """The answer to AddRaftVoter (verb "adding") or RemoveRaftVoter ("removing")."""
    try:
        require_cluster(ctx, AclOperation.ALTER)
        if request.cluster_id is not None and request.cluster_id != ctx.broker.cluster_id:
            raise KafkaError(ErrorCode.inconsistent_cluster_id, f'The given id "{request.cluster_id}" doesn\'t '
                             f'match the cluster id "{ctx.broker.cluster_id}"')
        if request.voter_directory_id is None:  # the zero Uuid: no directory named
            noun = "Add" if verb == "adding" else "Remove"
            raise KafkaError(ErrorCode.invalid_request, f"{noun} voter request didn't include a valid voter")
        raise KafkaError(ErrorCode.unsupported_version,
                         f"Cluster doesn't support {verb} voter because the kraft.version feature is 0")
    except KafkaError as exc:
        return ctx.respond({"throttle_time": 0, "error_code": exc.code, "error_message": exc.message})


async def handle(ctx: RequestContext, request: AddRaftVoterRequest) -> object:
    return refuse_voter_change(ctx, request, "adding")


HANDLER = Handler(api_key=ApiKey.ADD_RAFT_VOTER, min_version=0, max_version=1, handle=handle)
