"""ConsumerGroupDescribe requests v0-1 as kio reads them, for broker/handlers/consumer_group_describe.py."""

from typing import TypeAlias

from kio.schema.consumer_group_describe.v0 import request as v0
from kio.schema.consumer_group_describe.v1 import request as v1

__all__ = ("ConsumerGroupDescribeRequest",)

ConsumerGroupDescribeRequest: TypeAlias = v0.ConsumerGroupDescribeRequest | v1.ConsumerGroupDescribeRequest
