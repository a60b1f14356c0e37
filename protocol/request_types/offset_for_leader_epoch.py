"""OffsetForLeaderEpoch requests v2-4 as kio reads them, for broker/handlers/offset_for_leader_epoch.py."""

from typing import TypeAlias

from kio.schema.offset_for_leader_epoch.v2 import request as v2
from kio.schema.offset_for_leader_epoch.v3 import request as v3
from kio.schema.offset_for_leader_epoch.v4 import request as v4

__all__ = ("OffsetForLeaderPartition", "OffsetForLeaderTopic", "OffsetForLeaderEpochRequest")

OffsetForLeaderPartition: TypeAlias = (
    v2.OffsetForLeaderPartition | v3.OffsetForLeaderPartition | v4.OffsetForLeaderPartition
)
OffsetForLeaderTopic: TypeAlias = v2.OffsetForLeaderTopic | v3.OffsetForLeaderTopic | v4.OffsetForLeaderTopic
OffsetForLeaderEpochRequest: TypeAlias = (
    v2.OffsetForLeaderEpochRequest | v3.OffsetForLeaderEpochRequest | v4.OffsetForLeaderEpochRequest
)
