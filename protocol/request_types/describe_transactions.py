"""DescribeTransactions requests v0-0 as kio reads them, for broker/handlers/describe_transactions.py."""

from typing import TypeAlias

from kio.schema.describe_transactions.v0 import request as v0

__all__ = ("DescribeTransactionsRequest",)

DescribeTransactionsRequest: TypeAlias = v0.DescribeTransactionsRequest
