"""AlterPartitionReassignments requests v0-1 as kio reads them, for broker/handlers/alter_partition_reassignments.py."""

from typing import TypeAlias

from kio.schema.alter_partition_reassignments.v0 import request as v0
from kio.schema.alter_partition_reassignments.v1 import request as v1

__all__ = ("ReassignablePartition", "ReassignableTopic", "AlterPartitionReassignmentsRequest")

ReassignablePartition: TypeAlias = v0.ReassignablePartition | v1.ReassignablePartition
ReassignableTopic: TypeAlias = v0.ReassignableTopic | v1.ReassignableTopic
AlterPartitionReassignmentsRequest: TypeAlias = (
    v0.AlterPartitionReassignmentsRequest | v1.AlterPartitionReassignmentsRequest
)
