"""DescribeCluster requests v0-2 as kio reads them, for broker/handlers/describe_cluster.py."""

from typing import TypeAlias

from kio.schema.describe_cluster.v0 import request as v0
from kio.schema.describe_cluster.v1 import request as v1
from kio.schema.describe_cluster.v2 import request as v2

__all__ = ("DescribeClusterRequestV1Plus", "DescribeClusterRequest",)

DescribeClusterRequest: TypeAlias = v0.DescribeClusterRequest | v1.DescribeClusterRequest | v2.DescribeClusterRequest

# v1+: endpoint_type
DescribeClusterRequestV1Plus: TypeAlias = v1.DescribeClusterRequest | v2.DescribeClusterRequest
