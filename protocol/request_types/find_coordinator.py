"""FindCoordinator requests v0-6 as kio reads them, for broker/handlers/find_coordinator.py."""

from typing import TypeAlias

from kio.schema.find_coordinator.v0 import request as v0
from kio.schema.find_coordinator.v1 import request as v1
from kio.schema.find_coordinator.v2 import request as v2
from kio.schema.find_coordinator.v3 import request as v3
from kio.schema.find_coordinator.v4 import request as v4
from kio.schema.find_coordinator.v5 import request as v5
from kio.schema.find_coordinator.v6 import request as v6

__all__ = ("FindCoordinatorRequestV4Plus", "FindCoordinatorRequest",)

FindCoordinatorRequest: TypeAlias = (
    v0.FindCoordinatorRequest | v1.FindCoordinatorRequest | v2.FindCoordinatorRequest | v3.FindCoordinatorRequest
    | v4.FindCoordinatorRequest | v5.FindCoordinatorRequest | v6.FindCoordinatorRequest
)

# v4+ (KIP-699): a batch of coordinator_keys, not one key
FindCoordinatorRequestV4Plus: TypeAlias = (
    v4.FindCoordinatorRequest
    | v5.FindCoordinatorRequest
    | v6.FindCoordinatorRequest
)
