"""DescribeQuorum requests v0-2 as kio reads them, for broker/handlers/describe_quorum.py."""

from typing import TypeAlias

from kio.schema.describe_quorum.v0 import request as v0
from kio.schema.describe_quorum.v1 import request as v1
from kio.schema.describe_quorum.v2 import request as v2

__all__ = ("PartitionData", "TopicData", "DescribeQuorumRequest")

PartitionData: TypeAlias = v0.PartitionData | v1.PartitionData | v2.PartitionData
TopicData: TypeAlias = v0.TopicData | v1.TopicData | v2.TopicData
DescribeQuorumRequest: TypeAlias = v0.DescribeQuorumRequest | v1.DescribeQuorumRequest | v2.DescribeQuorumRequest
