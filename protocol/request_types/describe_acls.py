"""DescribeAcls requests v1-3 as kio reads them, for broker/handlers/describe_acls.py."""

from typing import TypeAlias

from kio.schema.describe_acls.v1 import request as v1
from kio.schema.describe_acls.v2 import request as v2
from kio.schema.describe_acls.v3 import request as v3

__all__ = ("DescribeAclsRequest",)

DescribeAclsRequest: TypeAlias = v1.DescribeAclsRequest | v2.DescribeAclsRequest | v3.DescribeAclsRequest
