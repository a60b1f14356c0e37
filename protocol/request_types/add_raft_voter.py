"""AddRaftVoter requests v0-1 as kio reads them, for broker/handlers/add_raft_voter.py."""

from typing import TypeAlias

from kio.schema.add_raft_voter.v0 import request as v0
from kio.schema.add_raft_voter.v1 import request as v1

__all__ = ("Listener", "AddRaftVoterRequest")

Listener: TypeAlias = v0.Listener | v1.Listener
AddRaftVoterRequest: TypeAlias = v0.AddRaftVoterRequest | v1.AddRaftVoterRequest
