"""DescribeDelegationToken requests v1-3 as kio reads them, for broker/handlers/describe_delegation_token.py."""

from typing import TypeAlias

from kio.schema.describe_delegation_token.v1 import request as v1
from kio.schema.describe_delegation_token.v2 import request as v2
from kio.schema.describe_delegation_token.v3 import request as v3

__all__ = ("DescribeDelegationTokenOwner", "DescribeDelegationTokenRequest")

DescribeDelegationTokenOwner: TypeAlias = (
    v1.DescribeDelegationTokenOwner | v2.DescribeDelegationTokenOwner | v3.DescribeDelegationTokenOwner
)
DescribeDelegationTokenRequest: TypeAlias = (
    v1.DescribeDelegationTokenRequest | v2.DescribeDelegationTokenRequest | v3.DescribeDelegationTokenRequest
)
