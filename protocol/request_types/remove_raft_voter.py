"""RemoveRaftVoter requests v0-0 as kio reads them, for broker/handlers/remove_raft_voter.py."""

from typing import TypeAlias

from kio.schema.remove_raft_voter.v0 import request as v0

__all__ = ("RemoveRaftVoterRequest",)

RemoveRaftVoterRequest: TypeAlias = v0.RemoveRaftVoterRequest
