"""CreateDelegationToken requests v1-3 as kio reads them, for broker/handlers/create_delegation_token.py."""

from typing import TypeAlias

from kio.schema.create_delegation_token.v1 import request as v1
from kio.schema.create_delegation_token.v2 import request as v2
from kio.schema.create_delegation_token.v3 import request as v3

__all__ = ("CreatableRenewers", "CreateDelegationTokenRequest")

CreatableRenewers: TypeAlias = v1.CreatableRenewers | v2.CreatableRenewers | v3.CreatableRenewers
CreateDelegationTokenRequest: TypeAlias = (
    v1.CreateDelegationTokenRequest | v2.CreateDelegationTokenRequest | v3.CreateDelegationTokenRequest
)
