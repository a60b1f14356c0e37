"""DescribeGroups requests v0-6 as kio reads them, for broker/handlers/describe_groups.py."""

from typing import TypeAlias

from kio.schema.describe_groups.v0 import request as v0
from kio.schema.describe_groups.v1 import request as v1
from kio.schema.describe_groups.v2 import request as v2
from kio.schema.describe_groups.v3 import request as v3
from kio.schema.describe_groups.v4 import request as v4
from kio.schema.describe_groups.v5 import request as v5
from kio.schema.describe_groups.v6 import request as v6

__all__ = ("DescribeGroupsRequest",)

DescribeGroupsRequest: TypeAlias = (
    v0.DescribeGroupsRequest | v1.DescribeGroupsRequest | v2.DescribeGroupsRequest | v3.DescribeGroupsRequest
    | v4.DescribeGroupsRequest | v5.DescribeGroupsRequest | v6.DescribeGroupsRequest
)
