"""DescribeClientQuotas requests v0-1 as kio reads them, for broker/handlers/describe_client_quotas.py."""

from typing import TypeAlias

from kio.schema.describe_client_quotas.v0 import request as v0
from kio.schema.describe_client_quotas.v1 import request as v1

__all__ = ("ComponentData", "DescribeClientQuotasRequest")

ComponentData: TypeAlias = v0.ComponentData | v1.ComponentData
DescribeClientQuotasRequest: TypeAlias = v0.DescribeClientQuotasRequest | v1.DescribeClientQuotasRequest
