"""Classic-protocol members inside a consumer group (KIP-848 migration), as pure functions.

Once a group speaks the consumer protocol, members still on the classic protocol keep using
JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and Kafka's GroupMetadataManager answers them
from the consumer group (classicGroupJoinToConsumerGroup and its siblings):

- JoinGroup updates the member's subscription (decoded from its ConsumerProtocolSubscription)
  and reconciles it one step, like a ConsumerGroupHeartbeat whose owned partitions are the
  subscription's; the reply comes at once, never parked: the generation is the member's epoch,
  no leader, no member list, so the client syncs as a follower.
- SyncGroup returns the member's assigned partitions as a ConsumerProtocolAssignment, unless a
  newer group epoch waits for it (REBALANCE_IN_PROGRESS: rejoin first).
- Heartbeat answers REBALANCE_IN_PROGRESS while the member lags the group epoch, has partitions
  to revoke, or waits for partitions that are now free: the rejoin moves it on.
- A member told to rejoin must do so within its rebalance timeout, and one that joined must sync
  within it (Kafka's join and sync timeouts), else it is fenced; its session timeout is its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from .consumer_group import ConsumerGroup
from .consumer_heartbeat import ConsumerGroupConfig, Topics, advance, fence
from .consumer_member import Assignment, ClassicMemberMetadata, ConsumerGroupMember, MemberState
from .consumer_protocol import decode_subscription, encode_assignment, protocol_version
from .member import JoinGroupResult, JoinParams, SyncGroupResult
from .membership import CONSUMER_PROTOCOL_TYPE

__all__ = ("classic_heartbeat", "classic_join", "classic_leave", "classic_sync", "supports_classic_protocols")


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, names: Sequence[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol
    every classic member already supports (any, while there is none)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return not classic or any(all(n in dict(c.supported_protocols) for c in classic) for n in names)


def _member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """Kafka's validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {group.group_id}.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise KafkaError(ErrorCode.unknown_member_id, f"Member with instance id {instance_id} is not a "
                             f"member of group {group.group_id}.")
        if member.member_id != member_id:
            raise KafkaError(ErrorCode.fenced_instance_id, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {member.member_id}.")
    if not member.uses_classic_protocol:
        raise KafkaError(ErrorCode.unknown_member_id, f"Member {member_id} does not use the classic protocol.")
    return member


def _check_generation(member: ConsumerGroupMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise KafkaError(ErrorCode.illegal_generation, f"The member {member.member_id} of group uses generation "
                         f"{generation_id} but its epoch is {member.member_epoch}.")


def _joining(group: ConsumerGroup, params: JoinParams, member_id: str) -> ConsumerGroupMember:
    """The member a JoinGroup speaks for: existing, new, or a static member's new incarnation."""
    if params.group_instance_id is None:
        member = group.members.get(member_id)
        if member is not None and not member.uses_classic_protocol:
            raise KafkaError(ErrorCode.unknown_member_id, f"Member {member_id} does not use the classic protocol.")
        return member or ConsumerGroupMember(member_id=member_id)
    existing = group.static_member(params.group_instance_id)
    if existing is None:
        return ConsumerGroupMember(member_id=member_id)
    if existing.member_id == member_id:
        return existing
    if params.member_id:
        raise KafkaError(ErrorCode.fenced_instance_id, f"Static member {member_id} with instance id "
                         f"{params.group_instance_id} was fenced by member {existing.member_id}.")
    # A restarted static member (no member id yet) takes over its predecessor's place.
    target = group.target.get(existing.member_id)
    group.remove_member(existing.member_id)
    if target is not None:
        group.target[member_id] = target
    return replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)


def _owned(owned: Mapping[str, frozenset[int]], topics: Topics) -> Assignment:
    return {topics[name][0]: parts for name, parts in owned.items() if name in topics and parts}


def classic_join(group: ConsumerGroup, params: JoinParams, topics: Topics, cfg: ConsumerGroupConfig,
                 now_ms: int) -> JoinGroupResult:
    """A JoinGroup to a consumer group with members (Kafka's classicGroupJoinToConsumerGroup);
    raises KafkaError with the error to answer."""
    member_id = params.member_id or str(uuid.uuid4())
    if member_id not in group.members and len(group.members) >= cfg.max_size:
        raise KafkaError(ErrorCode.group_max_size_reached, "The consumer group has reached its maximum "
                         f"capacity of {cfg.max_size} members.")
    if not supports_classic_protocols(group, params.protocol_type, [n for n, _ in params.protocols]):
        raise KafkaError(ErrorCode.inconsistent_group_protocol, f"Member {member_id}'s protocols are not "
                         f"supported by the group {group.group_id}.")
    if params.require_known_member_id and not params.member_id and params.group_instance_id is None:
        return JoinGroupResult(member_id=member_id, error=ErrorCode.member_id_required)
    try:
        subscription = decode_subscription(params.protocols[0][1])
    except ValueError as exc:
        raise KafkaError(ErrorCode.inconsistent_group_protocol, str(exc)) from None
    member = _joining(group, params, member_id)
    updated = replace(
        member, instance_id=params.group_instance_id, rack_id=subscription.rack_id or member.rack_id,
        client_id=params.client_id, client_host=params.client_host, server_assignor=None,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))), subscribed_topic_regex=None,
        rebalance_timeout_ms=params.rebalance_timeout_ms,
        classic=ClassicMemberMetadata(session_timeout_ms=params.session_timeout_ms,
                                      supported_protocols=tuple(params.protocols)))
    reconciled = advance(group, member, updated, topics, cfg, _owned(subscription.owned, topics), now_ms)
    group.session_deadlines[member_id] = now_ms + params.session_timeout_ms
    group.classic_deadlines[member_id] = now_ms + params.rebalance_timeout_ms  # it must sync by then
    return JoinGroupResult(member_id=member_id, generation_id=reconciled.member_epoch,
                           protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=params.protocols[0][0])


def _must_rejoin(group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int) -> None:
    group.classic_deadlines.setdefault(member.member_id, now_ms + max(member.rebalance_timeout_ms, 0))
    raise KafkaError(ErrorCode.rebalance_in_progress, f"A rebalance of group {group.group_id} is in progress: "
                     f"member {member.member_id} must rejoin.")


def classic_sync(group: ConsumerGroup, *, member_id: str, generation_id: int, instance_id: str | None,
                 protocol_type: str | None, protocol_name: str | None, names: Mapping[uuid.UUID, str],
                 now_ms: int) -> SyncGroupResult:
    """A SyncGroup of a classic member (Kafka's classicGroupSyncToConsumerGroup)."""
    member = _member(group, member_id, instance_id)
    _check_generation(member, generation_id)
    assert member.classic is not None
    first, metadata = member.classic.supported_protocols[0]
    if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
            (protocol_name is not None and protocol_name != first):
        raise KafkaError(ErrorCode.inconsistent_group_protocol, f"The protocol of member {member_id} does not "
                         "match the one it joined with.")
    # A member still revoking has rejoined already; it finishes that step first.
    if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        _must_rejoin(group, member, now_ms)
    group.classic_deadlines.pop(member_id, None)
    group.session_deadlines[member_id] = now_ms + member.classic.session_timeout_ms
    assigned = {names[t]: ps for t, ps in member.assigned.items() if t in names}
    return SyncGroupResult(protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=first,
                           assignment=encode_assignment(assigned, protocol_version(metadata)))


def classic_heartbeat(group: ConsumerGroup, *, member_id: str, generation_id: int, instance_id: str | None,
                      now_ms: int) -> None:
    """A Heartbeat of a classic member (Kafka's classicGroupHeartbeatToConsumerGroup); raises
    KafkaError, REBALANCE_IN_PROGRESS included, when the member must act."""
    member = _member(group, member_id, instance_id)
    _check_generation(member, generation_id)
    assert member.classic is not None
    group.session_deadlines[member_id] = now_ms + member.classic.session_timeout_ms
    if member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS or (
            member.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased(member)):
        _must_rejoin(group, member, now_ms)


def classic_leave(group: ConsumerGroup, members: Sequence[tuple[str, str | None]]) -> tuple[list[ErrorCode], set[str]]:
    """A LeaveGroup to a consumer group (Kafka's classicGroupLeaveToConsumerGroup): every member
    named leaves, whatever its protocol; return each one's error and the ids fenced."""
    errors, gone = [], set()
    for member_id, instance_id in members:
        try:
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    raise KafkaError(ErrorCode.unknown_member_id)
            else:
                member = group.static_member(instance_id)
                if member is None:
                    raise KafkaError(ErrorCode.unknown_member_id)
                if member_id and member.member_id != member_id:
                    raise KafkaError(ErrorCode.fenced_instance_id)
        except KafkaError as exc:
            errors.append(exc.code)
            continue
        errors.append(ErrorCode.none)
        gone.add(member.member_id)
        fence(group, member.member_id)
    return errors, gone
