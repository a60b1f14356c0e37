"""TxnOffsetCommit requests v0-6 as kio reads them, for broker/handlers/txn_offset_commit.py."""

from typing import TypeAlias

from kio.schema.txn_offset_commit.v0 import request as v0
from kio.schema.txn_offset_commit.v1 import request as v1
from kio.schema.txn_offset_commit.v2 import request as v2
from kio.schema.txn_offset_commit.v3 import request as v3
from kio.schema.txn_offset_commit.v4 import request as v4
from kio.schema.txn_offset_commit.v5 import request as v5

from .. import newer_schemas

__all__ = ("TxnOffsetCommitRequestPartition", "TxnOffsetCommitRequestTopic", "TxnOffsetCommitRequest")

TxnOffsetCommitRequestPartition: TypeAlias = (
    v0.TxnOffsetCommitRequestPartition | v1.TxnOffsetCommitRequestPartition | v2.TxnOffsetCommitRequestPartition
    | v3.TxnOffsetCommitRequestPartition | v4.TxnOffsetCommitRequestPartition | v5.TxnOffsetCommitRequestPartition
    | newer_schemas.TxnOffsetCommitRequestPartitionV6
)
TxnOffsetCommitRequestTopic: TypeAlias = (
    v0.TxnOffsetCommitRequestTopic | v1.TxnOffsetCommitRequestTopic | v2.TxnOffsetCommitRequestTopic
    | v3.TxnOffsetCommitRequestTopic | v4.TxnOffsetCommitRequestTopic | v5.TxnOffsetCommitRequestTopic
    | newer_schemas.TxnOffsetCommitRequestTopicV6
)
TxnOffsetCommitRequest: TypeAlias = (
    v0.TxnOffsetCommitRequest | v1.TxnOffsetCommitRequest | v2.TxnOffsetCommitRequest | v3.TxnOffsetCommitRequest
    | v4.TxnOffsetCommitRequest | v5.TxnOffsetCommitRequest | newer_schemas.TxnOffsetCommitRequestV6
)
