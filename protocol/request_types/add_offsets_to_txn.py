"""AddOffsetsToTxn requests v0-4 as kio reads them, for broker/handlers/add_offsets_to_txn.py."""

from typing import TypeAlias

from kio.schema.add_offsets_to_txn.v0 import request as v0
from kio.schema.add_offsets_to_txn.v1 import request as v1
from kio.schema.add_offsets_to_txn.v2 import request as v2
from kio.schema.add_offsets_to_txn.v3 import request as v3
from kio.schema.add_offsets_to_txn.v4 import request as v4

__all__ = ("AddOffsetsToTxnRequest",)

AddOffsetsToTxnRequest: TypeAlias = (
    v0.AddOffsetsToTxnRequest | v1.AddOffsetsToTxnRequest | v2.AddOffsetsToTxnRequest | v3.AddOffsetsToTxnRequest
    | v4.AddOffsetsToTxnRequest
)
