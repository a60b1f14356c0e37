"""ExpireDelegationToken requests v1-2 as kio reads them, for broker/handlers/expire_delegation_token.py."""

from typing import TypeAlias

from kio.schema.expire_delegation_token.v1 import request as v1
from kio.schema.expire_delegation_token.v2 import request as v2

__all__ = ("ExpireDelegationTokenRequest",)

ExpireDelegationTokenRequest: TypeAlias = v1.ExpireDelegationTokenRequest | v2.ExpireDelegationTokenRequest
