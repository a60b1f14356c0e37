"""ShareGroupDescribe requests v1-1 as kio reads them, for broker/handlers/share_group_describe.py:
one union per entity over the versions served (tests/broker/test_request_types.py checks them
against the dispatch table)."""

from typing import TypeAlias

from kio.schema.share_group_describe.v1 import request as v1

__all__ = ("ShareGroupDescribeRequest",)

ShareGroupDescribeRequest: TypeAlias = v1.ShareGroupDescribeRequest
