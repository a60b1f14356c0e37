"""ListTransactions requests v0-2 as kio reads them, for broker/handlers/list_transactions.py."""

from typing import TypeAlias

from kio.schema.list_transactions.v0 import request as v0
from kio.schema.list_transactions.v1 import request as v1
from kio.schema.list_transactions.v2 import request as v2

__all__ = ("ListTransactionsRequest",)

ListTransactionsRequest: TypeAlias = (
    v0.ListTransactionsRequest | v1.ListTransactionsRequest | v2.ListTransactionsRequest
)
