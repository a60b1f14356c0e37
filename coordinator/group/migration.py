"""Online conversion of a live group between the classic and the consumer protocol (KIP-848), as
Kafka's GroupMetadataManager does under group.consumer.migration.policy (disabled, upgrade,
downgrade, or bidirectional, Kafka's default):

- upgrade: the first ConsumerGroupHeartbeat to a classic group with members converts it when the
  policy allows, its protocol type is "consumer" and it fits group.consumer.max.size. Every
  classic member becomes a consumer-group member at the group's generation (member epoch, group
  epoch and assignment epoch all equal it), keeping the partitions of its last assignment as
  both its current and its target assignment; its JoinGroup metadata is kept (ClassicMemberMetadata)
  so it goes on with the classic APIs (classic_members.py). Parked joins and syncs are answered
  REBALANCE_IN_PROGRESS. Refusals are GROUP_ID_NOT_FOUND with Kafka's messages.
- downgrade: when the last consumer-protocol member leaves (or is fenced) and only classic members
  remain, the policy allows it, and they fit group.max.size, the group becomes a classic group at
  generation = its group epoch before that member left, Stable with each member's target
  assignment, and then rebalances at once, so the classic members rejoin and their leader assigns.
Committed offsets stay with the group either way. Each conversion is one append: the old type's
tombstones and the new type's records, so replay (and kill -9) lands on one or the other.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from .config import GroupConfig
from .consumer_group import ConsumerGroup
from .consumer_heartbeat import ConsumerGroupConfig, Topics
from .consumer_member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from .consumer_protocol import decode_assignment, decode_subscription, encode_assignment, protocol_version
from .log import GroupMetadataValue, MemberMetadataValue
from .membership import CONSUMER_PROTOCOL_TYPE
from .metadata import GroupMetadata

__all__ = ("check_upgrade", "classic_value", "downgrade_allowed", "to_consumer_group")

_UPGRADE = frozenset({"upgrade", "bidirectional"})
_DOWNGRADE = frozenset({"downgrade", "bidirectional"})


def _cannot_upgrade(group_id: str, why: str) -> KafkaError:
    return KafkaError(ErrorCode.group_id_not_found,
                      f"Cannot upgrade classic group {group_id} to consumer group because {why}.")


def check_upgrade(group: GroupMetadata, cfg: ConsumerGroupConfig) -> None:
    """Kafka's validateOnlineUpgrade."""
    if cfg.migration_policy not in _UPGRADE:
        raise _cannot_upgrade(group.group_id, "online upgrade is disabled")
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise _cannot_upgrade(group.group_id, "the group does not use the consumer embedded protocol")
    if len(group.members) > cfg.max_size:
        raise _cannot_upgrade(group.group_id, "the group size exceeds the consumer group maximum size")


def to_consumer_group(group: GroupMetadata, topics: Topics) -> ConsumerGroup:
    """Kafka's ConsumerGroup.fromClassicGroup; raises KafkaError if a member's embedded consumer
    protocol does not parse."""
    generation = group.generation_id
    out = ConsumerGroup(group.group_id)
    out.group_epoch = out.assignment_epoch = generation
    for m in group.members.values():
        metadata = m.metadata(group.protocol_name) if group.protocol_name else m.supported_protocols[0][1]
        try:
            subscription = decode_subscription(metadata)
            assigned = decode_assignment(m.assignment)
        except ValueError:
            raise _cannot_upgrade(group.group_id, "the embedded consumer protocol is malformed") from None
        partitions = {topics[t][0]: ps for t, ps in assigned.items() if t in topics and ps}
        out.put_member(ConsumerGroupMember(
            member_id=m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=generation,
            previous_member_epoch=generation, state=MemberState.STABLE, assigned=partitions,
            classic=ClassicMemberMetadata(session_timeout_ms=m.session_timeout_ms,
                                          supported_protocols=m.supported_protocols)))
        out.target[m.member_id] = partitions
    return out


def downgrade_allowed(consumer: ConsumerGroup, leaving: set[str], cfg: ConsumerGroupConfig,
                      classic: GroupConfig) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers (leaving: members fenced just now)."""
    remaining = len(consumer.members.keys() - leaving)
    return (consumer.all_classic_except(leaving) and cfg.migration_policy in _DOWNGRADE
            and remaining <= classic.max_size)


def _preferred(consumer: ConsumerGroup) -> str:
    """The protocol the classic group will use: the first every member supports, by the first
    member's preference (Kafka then votes again in the rebalance that follows)."""
    members = [m.classic for m in consumer.members.values() if m.classic is not None]
    for name, _ in members[0].supported_protocols:
        if all(name in dict(c.supported_protocols) for c in members):
            return name
    return members[0].supported_protocols[0][0]


def classic_value(consumer: ConsumerGroup, names: Mapping[uuid.UUID, str], generation: int,
                  now_ms: int) -> GroupMetadataValue:
    """The classic group record a consumer group of classic members downgrades to (Kafka's
    ClassicGroup.fromConsumerGroup): Stable at `generation`, the group epoch before the change
    that triggered it (Kafka converts instead of writing the fencing records, so the epoch is not
    bumped and the members' generation stays valid for their commits), each member holding its
    target assignment, encoded in the version of its own subscription."""
    protocol = _preferred(consumer)
    members = []
    for mid, m in consumer.members.items():
        assert m.classic is not None
        metadata = dict(m.classic.supported_protocols).get(protocol, b"")
        target = {names[t]: ps for t, ps in consumer.target.get(mid, {}).items() if t in names}
        members.append(MemberMetadataValue(
            member_id=mid, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.classic.session_timeout_ms,
            subscription=metadata, assignment=encode_assignment(target, protocol_version(metadata))))
    return GroupMetadataValue(protocol_type=CONSUMER_PROTOCOL_TYPE, generation=generation,
                              protocol=protocol, leader=members[0].member_id if members else None,
                              current_state_timestamp=now_ms, members=tuple(members))
