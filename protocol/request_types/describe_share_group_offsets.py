"""DescribeShareGroupOffsets requests v0-1 as kio reads them, for broker/handlers/describe_share_group_offsets.py."""

from typing import TypeAlias

from kio.schema.describe_share_group_offsets.v0 import request as v0
from kio.schema.describe_share_group_offsets.v1 import request as v1

__all__ = (
    "DescribeShareGroupOffsetsRequestTopic", "DescribeShareGroupOffsetsRequestGroup",
    "DescribeShareGroupOffsetsRequest",
)

DescribeShareGroupOffsetsRequestTopic: TypeAlias = (
    v0.DescribeShareGroupOffsetsRequestTopic | v1.DescribeShareGroupOffsetsRequestTopic
)
DescribeShareGroupOffsetsRequestGroup: TypeAlias = (
    v0.DescribeShareGroupOffsetsRequestGroup | v1.DescribeShareGroupOffsetsRequestGroup
)
DescribeShareGroupOffsetsRequest: TypeAlias = v0.DescribeShareGroupOffsetsRequest | v1.DescribeShareGroupOffsetsRequest
