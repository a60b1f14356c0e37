"""OffsetDelete requests v0-0 as kio reads them, for broker/handlers/offset_delete.py."""

from typing import TypeAlias

from kio.schema.offset_delete.v0 import request as v0

__all__ = ("OffsetDeleteRequestPartition", "OffsetDeleteRequestTopic", "OffsetDeleteRequest")

OffsetDeleteRequestPartition: TypeAlias = v0.OffsetDeleteRequestPartition
OffsetDeleteRequestTopic: TypeAlias = v0.OffsetDeleteRequestTopic
OffsetDeleteRequest: TypeAlias = v0.OffsetDeleteRequest
