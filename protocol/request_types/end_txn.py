"""EndTxn requests v0-5 as kio reads them, for broker/handlers/end_txn.py."""

from typing import TypeAlias

from kio.schema.end_txn.v0 import request as v0
from kio.schema.end_txn.v1 import request as v1
from kio.schema.end_txn.v2 import request as v2
from kio.schema.end_txn.v3 import request as v3
from kio.schema.end_txn.v4 import request as v4
from kio.schema.end_txn.v5 import request as v5

__all__ = ("EndTxnRequest",)

EndTxnRequest: TypeAlias = (
    v0.EndTxnRequest | v1.EndTxnRequest | v2.EndTxnRequest | v3.EndTxnRequest | v4.EndTxnRequest | v5.EndTxnRequest
)
