"""AlterShareGroupOffsets requests v0-0 as kio reads them, for broker/handlers/alter_share_group_offsets.py."""

from typing import TypeAlias

from kio.schema.alter_share_group_offsets.v0 import request as v0

__all__ = (
    "AlterShareGroupOffsetsRequestPartition", "AlterShareGroupOffsetsRequestTopic", "AlterShareGroupOffsetsRequest",
)

AlterShareGroupOffsetsRequestPartition: TypeAlias = v0.AlterShareGroupOffsetsRequestPartition
AlterShareGroupOffsetsRequestTopic: TypeAlias = v0.AlterShareGroupOffsetsRequestTopic
AlterShareGroupOffsetsRequest: TypeAlias = v0.AlterShareGroupOffsetsRequest
