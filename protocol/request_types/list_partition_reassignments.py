"""ListPartitionReassignments requests v0-0 as kio reads them, for broker/handlers/list_partition_reassignments.py."""

from typing import TypeAlias

from kio.schema.list_partition_reassignments.v0 import request as v0

__all__ = ("ListPartitionReassignmentsTopics", "ListPartitionReassignmentsRequest")

ListPartitionReassignmentsTopics: TypeAlias = v0.ListPartitionReassignmentsTopics
ListPartitionReassignmentsRequest: TypeAlias = v0.ListPartitionReassignmentsRequest
