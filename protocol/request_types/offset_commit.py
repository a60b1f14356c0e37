"""OffsetCommit requests v2-10 as kio reads them, for broker/handlers/offset_commit.py."""

from typing import TypeAlias

from kio.schema.offset_commit.v2 import request as v2
from kio.schema.offset_commit.v3 import request as v3
from kio.schema.offset_commit.v4 import request as v4
from kio.schema.offset_commit.v5 import request as v5
from kio.schema.offset_commit.v6 import request as v6
from kio.schema.offset_commit.v7 import request as v7
from kio.schema.offset_commit.v8 import request as v8
from kio.schema.offset_commit.v9 import request as v9
from kio.schema.offset_commit.v10 import request as v10

__all__ = ("OffsetCommitRequestPartition", "OffsetCommitRequestTopic", "OffsetCommitRequest")

OffsetCommitRequestPartition: TypeAlias = (
    v2.OffsetCommitRequestPartition | v3.OffsetCommitRequestPartition | v4.OffsetCommitRequestPartition
    | v5.OffsetCommitRequestPartition | v6.OffsetCommitRequestPartition | v7.OffsetCommitRequestPartition
    | v8.OffsetCommitRequestPartition | v9.OffsetCommitRequestPartition | v10.OffsetCommitRequestPartition
)
OffsetCommitRequestTopic: TypeAlias = (
    v2.OffsetCommitRequestTopic | v3.OffsetCommitRequestTopic | v4.OffsetCommitRequestTopic
    | v5.OffsetCommitRequestTopic | v6.OffsetCommitRequestTopic | v7.OffsetCommitRequestTopic
    | v8.OffsetCommitRequestTopic | v9.OffsetCommitRequestTopic | v10.OffsetCommitRequestTopic
)
OffsetCommitRequest: TypeAlias = (
    v2.OffsetCommitRequest | v3.OffsetCommitRequest | v4.OffsetCommitRequest | v5.OffsetCommitRequest
    | v6.OffsetCommitRequest | v7.OffsetCommitRequest | v8.OffsetCommitRequest | v9.OffsetCommitRequest
    | v10.OffsetCommitRequest
)
