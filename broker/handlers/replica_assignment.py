"""Manual replica assignments in CreateTopics and CreatePartitions, checked as Kafka's controller
checks them (ReplicationControlManager.validateManualPartitionAssignment).

With shared storage a partition is led by whichever live broker holds its lease, so an assignment
only fixes how many replicas Metadata lists; it is still validated in full so that a request Kafka
refuses is refused here with the same error, and one Kafka accepts is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError

from ..handler import RequestContext

if TYPE_CHECKING:
    from protocol.request_types.create_partitions import CreatePartitionsAssignment
    from protocol.request_types.create_topics import CreatableTopic


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_replica_assignment, message)


def check_replicas(ctx: RequestContext, broker_ids: Sequence[int], replication_factor: int | None) -> int:
    """The replica count of one partition's assignment, or INVALID_REPLICA_ASSIGNMENT."""
    if not broker_ids:
        raise _invalid("The manual partition assignment includes an empty replica list.")
    registered = {b.node_id for b in ctx.broker.cluster.live_brokers()}
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id not in registered:
            raise _invalid(f"The manual partition assignment includes broker {broker_id}, "
                           "but no such broker is registered.")
        if broker_id == previous:
            raise _invalid(f"The manual partition assignment includes the broker {broker_id} more than once.")
        previous = broker_id
    if replication_factor is not None and len(broker_ids) != replication_factor:
        raise _invalid(f"The manual partition assignment includes a partition with {len(broker_ids)} "
                       "replica(s), but this is not consistent with previous partitions, which have "
                       f"{replication_factor} replica(s).")
    return len(broker_ids)


def new_topic_layout(ctx: RequestContext, topic: CreatableTopic) -> tuple[int, int]:
    """(partitions, replication factor) of a CreateTopics entry with assignments."""
    if topic.replication_factor != -1:
        raise KafkaError(ErrorCode.invalid_request, "A manual partition assignment was specified, "
                         "but replication factor was not set to -1.")
    if topic.num_partitions != -1:
        raise KafkaError(ErrorCode.invalid_request, "A manual partition assignment was specified, "
                         "but numPartitions was not set to -1.")
    seen: set[int] = set()
    replication_factor: int | None = None
    for assignment in topic.assignments:
        if assignment.partition_index in seen:
            raise _invalid(f"Found multiple manual partition assignments for partition "
                           f"{assignment.partition_index}")
        seen.add(assignment.partition_index)
        replication_factor = check_replicas(ctx, assignment.broker_ids, replication_factor)
    if seen != set(range(len(seen))):
        raise _invalid("partitions should be a consecutive 0-based integer sequence")
    assert replication_factor is not None  # assignments is not empty here
    return len(seen), replication_factor


def check_new_partitions(ctx: RequestContext, assignments: Sequence[CreatePartitionsAssignment], additional: int,
                         ) -> None:
    """CreatePartitions: one assignment per added partition, all of one replica count. (Kafka
    also compares that count with the topic's; with shared storage the replicas a partition lists
    follow the live brokers, so there is no fixed count to compare with.)"""
    if len(assignments) != additional:
        raise _invalid(f"Attempted to add {additional} additional partition(s), but only "
                       f"{len(assignments)} assignment(s) were specified.")
    replication_factor: int | None = None
    for assignment in assignments:
        replication_factor = check_replicas(ctx, assignment.broker_ids, replication_factor)
