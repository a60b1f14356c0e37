"""SyncGroup requests v0-5 as kio reads them, for broker/handlers/sync_group.py."""

from typing import TypeAlias

from kio.schema.sync_group.v0 import request as v0
from kio.schema.sync_group.v1 import request as v1
from kio.schema.sync_group.v2 import request as v2
from kio.schema.sync_group.v3 import request as v3
from kio.schema.sync_group.v4 import request as v4
from kio.schema.sync_group.v5 import request as v5

__all__ = ("SyncGroupRequestAssignment", "SyncGroupRequest")

SyncGroupRequestAssignment: TypeAlias = (
    v0.SyncGroupRequestAssignment | v1.SyncGroupRequestAssignment | v2.SyncGroupRequestAssignment
    | v3.SyncGroupRequestAssignment | v4.SyncGroupRequestAssignment | v5.SyncGroupRequestAssignment
)
SyncGroupRequest: TypeAlias = (
    v0.SyncGroupRequest | v1.SyncGroupRequest | v2.SyncGroupRequest | v3.SyncGroupRequest | v4.SyncGroupRequest
    | v5.SyncGroupRequest
)
