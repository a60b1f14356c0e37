"""DescribeConfigs requests v1-4 as kio reads them, for broker/handlers/describe_configs.py."""

from typing import TypeAlias

from kio.schema.describe_configs.v1 import request as v1
from kio.schema.describe_configs.v2 import request as v2
from kio.schema.describe_configs.v3 import request as v3
from kio.schema.describe_configs.v4 import request as v4

__all__ = ("DescribeConfigsResource", "DescribeConfigsRequest")

DescribeConfigsResource: TypeAlias = (
    v1.DescribeConfigsResource | v2.DescribeConfigsResource | v3.DescribeConfigsResource
    | v4.DescribeConfigsResource
)
DescribeConfigsRequest: TypeAlias = (
    v1.DescribeConfigsRequest | v2.DescribeConfigsRequest | v3.DescribeConfigsRequest | v4.DescribeConfigsRequest
)
