"""RenewDelegationToken requests v1-2 as kio reads them, for broker/handlers/renew_delegation_token.py."""

from typing import TypeAlias

from kio.schema.renew_delegation_token.v1 import request as v1
from kio.schema.renew_delegation_token.v2 import request as v2

__all__ = ("RenewDelegationTokenRequest",)

RenewDelegationTokenRequest: TypeAlias = v1.RenewDelegationTokenRequest | v2.RenewDelegationTokenRequest
