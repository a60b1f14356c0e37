"""AddPartitionsToTxn requests v0-5 as kio reads them, for broker/handlers/add_partitions_to_txn.py."""

from typing import TypeAlias

from kio.schema.add_partitions_to_txn.v0 import request as v0
from kio.schema.add_partitions_to_txn.v1 import request as v1
from kio.schema.add_partitions_to_txn.v2 import request as v2
from kio.schema.add_partitions_to_txn.v3 import request as v3
from kio.schema.add_partitions_to_txn.v4 import request as v4
from kio.schema.add_partitions_to_txn.v5 import request as v5

__all__ = (
    "AddPartitionsToTxnRequestV4Plus", "AddPartitionsToTxnTopic", "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnTransaction",
)

AddPartitionsToTxnTopic: TypeAlias = (
    v0.AddPartitionsToTxnTopic | v1.AddPartitionsToTxnTopic | v2.AddPartitionsToTxnTopic
    | v3.AddPartitionsToTxnTopic | v4.AddPartitionsToTxnTopic | v5.AddPartitionsToTxnTopic
)
AddPartitionsToTxnRequest: TypeAlias = (
    v0.AddPartitionsToTxnRequest | v1.AddPartitionsToTxnRequest | v2.AddPartitionsToTxnRequest
    | v3.AddPartitionsToTxnRequest | v4.AddPartitionsToTxnRequest | v5.AddPartitionsToTxnRequest
)
AddPartitionsToTxnTransaction: TypeAlias = v4.AddPartitionsToTxnTransaction | v5.AddPartitionsToTxnTransaction

# v4+ (KIP-890): transactions batched by a broker, not one client's transaction
AddPartitionsToTxnRequestV4Plus: TypeAlias = v4.AddPartitionsToTxnRequest | v5.AddPartitionsToTxnRequest
