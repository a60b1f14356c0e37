"""What a group's membership decides about its offsets: who may commit, and when offsets expire.

Kafka keeps these in GroupCoordinator.validateOffsetCommit / doCommitOffsets and
GroupMetadata.removeExpiredOffsets; they read the group's state and members but only change the
OffsetStore, so they live apart from the rebalance logic in metadata.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from storage.api import TopicPartition

from .consumer_group import ConsumerGroup
from .consumer_member import ConsumerGroupMember
from .metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata
from .state import GroupState

__all__ = ("expired_offsets", "validate_consumer_offset_commit", "validate_offset_commit",
           "validate_offset_fetch")


def validate_offset_commit(
    group: GroupMetadata,
    *,
    member_id: str,
    group_instance_id: str | None,
    generation_id: int,
    transactional: bool = False,
    api_version: int = 9,
    partitions: Iterable[tuple[uuid.UUID | None, int]] = (),
) -> ErrorCode | None:
    """Who may commit now: Kafka's validateOffsetCommit for OffsetCommit, and the KIP-447 check
    of TxnOffsetCommit v3+ (transactional). None: the commit may be written. `partitions`: the
    (topic id, partition) pairs committed, which a consumer group checks an older epoch against."""
    if group.consumer is not None:
        return validate_consumer_offset_commit(
            group.consumer, member_id=member_id, group_instance_id=group_instance_id, member_epoch=generation_id,
            transactional=transactional, api_version=api_version, partitions=partitions)
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    if generation_id < 0 and group.state is GroupState.EMPTY:
        # Kafka's ClassicGroup.validateOffsetCommit checks this first: generation -1 comes from an
        # admin client or a consumer outside group management, whatever member id it sends
        # (librdkafka's KIP-848 consumer sends the member id it made up before joining).
        return None
    if generation_id >= 0 or member_id or group_instance_id is not None:
        error = group.validate_member(member_id, group_instance_id)
        if error is None and generation_id != group.generation_id:
            error = ErrorCode.illegal_generation
        if error is None and not transactional and group.state is GroupState.COMPLETING_REBALANCE:
            # The member has its new generation but not its assignment yet.
            error = ErrorCode.rebalance_in_progress
        return error
    if not transactional and group.state is not GroupState.EMPTY:
        # Once the group has members, only they may commit. Transactional commits are exempt:
        # TxnOffsetCommit before v3 carries no member id or generation.
        return ErrorCode.unknown_member_id
    return None


def validate_consumer_offset_commit(
    group: ConsumerGroup, *, member_id: str, member_epoch: int, transactional: bool, api_version: int,
    group_instance_id: str | None = None, partitions: Iterable[tuple[uuid.UUID | None, int]] = (),
) -> ErrorCode | None:
    """Kafka's ConsumerGroup.validateOffsetCommit (4.3+): the generation field carries the member
    epoch. An epoch below 0 may commit while the group has no members (admin tools, assign()),
    and a transactional commit with epoch -1 and no member (a producer outside the group) always.
    An older epoch than the member's may commit the partitions the member has held since that
    epoch (KIP-1251's assignment epochs); a newer one may not."""
    if member_epoch < 0 and not group.members:
        return None
    if transactional and member_epoch == -1 and not member_id and group_instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if not transactional and api_version < 9 and not member.uses_classic_protocol:
        # "OffsetCommit version 9 or above must be used by members using the modern group protocol"
        return ErrorCode.unsupported_version
    if member_epoch >= member.member_epoch:
        return _epoch_error(member_epoch, member)
    for topic_id, partition in partitions:
        since = None if topic_id is None else member.assignment_epoch(topic_id, partition)
        if since is None or member_epoch < since:
            return ErrorCode.illegal_generation if member.uses_classic_protocol else ErrorCode.stale_member_epoch
    return None


def _epoch_error(received: int, member: ConsumerGroupMember) -> ErrorCode | None:
    """Kafka's ConsumerGroup.validateMemberEpoch: a classic member's generation is its epoch."""
    if received == member.member_epoch:
        return None
    return ErrorCode.illegal_generation if member.uses_classic_protocol else ErrorCode.stale_member_epoch


def validate_offset_fetch(group: GroupMetadata, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    """Kafka's ConsumerGroup.validateOffsetFetch (OffsetFetch v9+ from a consumer-protocol member);
    classic groups and requests without a member (null id, epoch -1) are not checked."""
    consumer = group.consumer
    if consumer is None or (member_id is None and member_epoch < 0):
        return None
    member = consumer.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    return _epoch_error(member_epoch, member)


def expired_offsets(group: GroupMetadata, now_ms: int) -> list[TopicPartition]:
    """The offsets past offsets.retention.minutes, as Kafka 2.1+ (KIP-211) expires them.

    - Empty group with a protocol type: retention counts from when the group became Empty.
    - Stable consumer group: offsets of topics nobody subscribes to any more, from their commit.
    - Group that never had members (offsets only, e.g. assign() consumers): from each commit.
    Other states keep everything.
    """
    retention = group.config.offsets_retention_ms
    store = group.offsets
    if group.consumer is not None:
        # Kafka's ConsumerGroup.isSubscribedToTopic: offsets of subscribed topics never expire.
        return store.expired(now_ms, retention, keep_topics=group.consumer.subscribed_topic_names())
    if group.protocol_type is not None and group.state is GroupState.EMPTY:
        return store.expired(now_ms, retention, base_timestamp=group.current_state_timestamp)
    if (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.subscribed_topics is not None
        and group.state is GroupState.STABLE
    ):
        return store.expired(now_ms, retention, keep_topics=group.subscribed_topics)
    if group.protocol_type is None:
        return store.expired(now_ms, retention)
    return []
