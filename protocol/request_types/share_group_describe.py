"""ShareGroupDescribe requests v1-1 as kio reads them, for broker/handlers/share_group_describe.py."""

from typing import TypeAlias

from kio.schema.share_group_describe.v1 import request as v1

__all__ = ("ShareGroupDescribeRequest",)

ShareGroupDescribeRequest: TypeAlias = v1.ShareGroupDescribeRequest
