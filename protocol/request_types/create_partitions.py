"""CreatePartitions requests v0-3 as kio reads them, for broker/handlers/create_partitions.py."""

from typing import TypeAlias

from kio.schema.create_partitions.v0 import request as v0
from kio.schema.create_partitions.v1 import request as v1
from kio.schema.create_partitions.v2 import request as v2
from kio.schema.create_partitions.v3 import request as v3

__all__ = ("CreatePartitionsAssignment", "CreatePartitionsTopic", "CreatePartitionsRequest")

CreatePartitionsAssignment: TypeAlias = (
    v0.CreatePartitionsAssignment | v1.CreatePartitionsAssignment | v2.CreatePartitionsAssignment
    | v3.CreatePartitionsAssignment
)
CreatePartitionsTopic: TypeAlias = (
    v0.CreatePartitionsTopic | v1.CreatePartitionsTopic | v2.CreatePartitionsTopic | v3.CreatePartitionsTopic
)
CreatePartitionsRequest: TypeAlias = (
    v0.CreatePartitionsRequest | v1.CreatePartitionsRequest | v2.CreatePartitionsRequest
    | v3.CreatePartitionsRequest
)
