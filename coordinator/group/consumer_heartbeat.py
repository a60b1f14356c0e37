"""ConsumerGroupHeartbeat on a ConsumerGroup: Kafka's GroupMetadataManager.consumerGroupHeartbeat.

One heartbeat does, in order (each step can only move the group forward):
1. validate the request, find or create the member, and fence stale epochs (FENCED_MEMBER_EPOCH,
   UNKNOWN_MEMBER_ID; static members: UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID);
2. update the member's subscription; bump the group epoch when a subscription changed or the
   subscribed topics changed (a new topic, a regex now matching one, more partitions);
3. recompute the target assignment with the group's assignor when the group epoch is ahead of it;
4. reconcile this member one step towards its target (consumer_member.reconcile), and answer
   with its epoch and, when it changed or the request was a full one, its assignment.

Time is an argument; the actor calls expire() at the group's next deadline to fence members that
missed their session timeout or did not revoke within their rebalance timeout. These functions
change the group they are given: the actor gives them a copy (consumer_shard.decide), turns what
they did into records, and the live group changes only when those are written and replayed.

Regex subscriptions (SubscribedTopicRegex) are Java RE2/J patterns in Kafka; here Python's `re`
full-matches them against topic names. The common subset (classes, alternation, anchors,
quantifiers, groups) behaves alike; RE2/J rejects backreferences and lookaround that Python
accepts, and \\p{...} Unicode classes are not Python syntax (a pattern Python cannot compile is
INVALID_REGULAR_EXPRESSION). Internal topics (names starting with "__") never match.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from ..re2j import Re2jSyntaxError, compile_re2j
from .assignors import ASSIGNORS, GroupSpec, MemberSubscription
from .consumer_group import ConsumerGroup
from .consumer_member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    reconcile,
)

__all__ = ("ConsumerGroupConfig", "HeartbeatRequest", "HeartbeatResult", "Topics", "advance", "assignor_name",
           "expire", "fence",
           "heartbeat", "leave", "subscription_metadata", "update_target", "validate")

# Every topic of the broker: name -> (topic id, partition count).
Topics = Mapping[str, tuple[uuid.UUID, int]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupConfig:
    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors
    max_size: int = 2**31 - 1  # group.consumer.max.size
    # group.consumer.migration.policy: which way a group with members may change protocol.
    migration_policy: str = "bidirectional"


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)


def validate(group_id: str, req: HeartbeatRequest, cfg: ConsumerGroupConfig) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    for value, name in ((group_id, "GroupId"), (req.instance_id, "InstanceId"), (req.rack_id, "RackId")):
        if value == "":
            raise _invalid(f"{name} can't be empty.")
    _validate_epoch(req)
    if req.server_assignor is not None and req.server_assignor not in cfg.assignors:
        raise KafkaError(ErrorCode.unsupported_assignor, f"ServerAssignor {req.server_assignor} is not "
                         f"supported. Supported assignors: {', '.join(cfg.assignors)}.")
    if req.subscribed_topic_regex is not None:
        _compile(req.subscribed_topic_regex)


def _validate_epoch(req: HeartbeatRequest) -> None:
    if req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not req.member_id:
            raise _invalid("MemberId can't be empty.")
    elif req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or any(req.owned.values()):
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if not req.subscribed_topic_names and req.subscribed_topic_regex is None:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not req.member_id:
            raise _invalid("MemberId can't be empty.")
        if req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    else:
        raise _invalid("MemberEpoch is invalid.")


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    """The pattern as Kafka 4.x reads it: RE2/J syntax (Utils.throwIfRegularExpressionIsInvalid,
    TopicRegexResolver), matched against whole topic names."""
    try:
        return compile_re2j(pattern)
    except Re2jSyntaxError as exc:
        why = str(exc).removeprefix("error parsing regexp: ")
        raise KafkaError(ErrorCode.invalid_regular_expression,
                         f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {why}.") from None


def _fenced(message: str) -> KafkaError:
    return KafkaError(ErrorCode.fenced_member_epoch, message + " The member must abandon all its "
                      "partitions and rejoin.")


def _check_epoch(member: ConsumerGroupMember, received: int, owned: Assignment | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a member one epoch behind that owns only
    what it was assigned just lost the response that moved it forward."""
    if received > member.member_epoch:
        raise _fenced(f"The consumer group member has a greater member epoch ({received}) than the "
                      f"one known by the group coordinator ({member.member_epoch}).")
    if received < member.member_epoch:
        subset = owned is not None and all(
            ps <= member.assigned.get(t, frozenset()) for t, ps in owned.items() if ps)
        if received != member.previous_member_epoch or not subset:
            raise _fenced(f"The consumer group member has a smaller member epoch ({received}) than "
                          f"the one known by the group coordinator ({member.member_epoch}).")


def _find_member(group: ConsumerGroup, req: HeartbeatRequest, member_id: str) -> ConsumerGroupMember:
    joining = req.member_epoch == 0
    if req.instance_id is not None:
        return _find_static_member(group, req, member_id)
    member = group.members.get(member_id)
    if member is None:
        if not joining:
            raise KafkaError(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {group.group_id}.")
        return ConsumerGroupMember(member_id=member_id)
    if joining:
        # The member rejoins from scratch (after being fenced, say): what it held is released.
        group.remove_member(member_id)
        return ConsumerGroupMember(member_id=member_id, instance_id=member.instance_id)
    _check_epoch(member, req.member_epoch, req.owned)
    return member


def _find_static_member(group: ConsumerGroup, req: HeartbeatRequest, member_id: str) -> ConsumerGroupMember:
    assert req.instance_id is not None
    existing = group.static_member(req.instance_id)
    if req.member_epoch == 0:
        if existing is None:
            return ConsumerGroupMember(member_id=member_id)
        # Only a consumer-protocol predecessor must have left first (epoch -2); a classic one is
        # replaced at once, as a classic rejoin replaces it (Kafka's static member replacement).
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and existing.member_id != member_id \
                and not existing.uses_classic_protocol:
            raise KafkaError(ErrorCode.unreleased_instance_id, f"Static member {member_id} with instance "
                             f"id {req.instance_id} cannot join the group because the instance id is owned by "
                             f"{existing.member_id} member.")
        # The new incarnation takes over the old one's place and assignment (KIP-345 for KIP-848).
        target = group.target.get(existing.member_id)
        group.remove_member(existing.member_id)
        replacement = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        if target is not None:
            group.target[member_id] = target
        return replacement
    if existing is None:
        raise KafkaError(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.")
    if existing.member_id != member_id:
        raise KafkaError(ErrorCode.fenced_instance_id, f"Static member {member_id} with instance id "
                         f"{req.instance_id} was fenced by member {existing.member_id}.")
    _check_epoch(existing, req.member_epoch, req.owned)
    return existing


def _updated(member: ConsumerGroupMember, req: HeartbeatRequest) -> ConsumerGroupMember:
    # A heartbeat speaks the consumer protocol: a static member's classic predecessor's
    # JoinGroup metadata does not carry over (Kafka clears ClassicMemberMetadata here too).
    changes: dict[str, object] = {"client_id": req.client_id, "client_host": req.client_host, "classic": None}
    for name in ("instance_id", "rack_id", "server_assignor", "subscribed_topic_regex"):
        if getattr(req, name) is not None:
            changes[name] = getattr(req, name)
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    return replace(member, **changes)  # type: ignore[arg-type]


def _member_topics(member: ConsumerGroupMember, topics: Topics) -> frozenset[str]:
    names = {n for n in member.subscribed_topic_names if n in topics}
    if member.subscribed_topic_regex is not None:
        pattern = _compile(member.subscribed_topic_regex)
        # every topic the pattern matches, internal ones too, as Kafka 4.x's TopicRegexResolver
        names.update(n for n in topics if pattern.fullmatch(n))
    return frozenset(names)


def subscription_metadata(group: ConsumerGroup, topics: Topics) -> dict[str, tuple[uuid.UUID, int]]:
    names: set[str] = set()
    for member in group.members.values():
        names |= _member_topics(member, topics)
    return {n: topics[n] for n in sorted(names)}


def assignor_name(group: ConsumerGroup, cfg: ConsumerGroupConfig) -> str:
    """Kafka's preferred server assignor: the one most members ask for, else the default."""
    votes: dict[str, int] = {}
    for member in group.members.values():
        if member.server_assignor is not None:
            votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
    if not votes:
        return cfg.assignors[0]
    return max(sorted(votes), key=lambda name: votes[name])


def update_target(group: ConsumerGroup, topics: Topics, cfg: ConsumerGroupConfig) -> None:
    """Compute the target assignment for the current group epoch (Kafka's updateTargetAssignment)."""
    # Static members that left for a while (epoch -2) keep their share, as in Kafka.
    spec = GroupSpec(
        members=tuple(
            MemberSubscription(
                member_id=mid,
                instance_id=m.instance_id,
                topic_ids=frozenset(topics[n][0] for n in _member_topics(m, topics)),
                current=group.target.get(mid, {}),
            )
            for mid, m in sorted(group.members.items())
        ),
        partitions={tid: count for tid, count in group.subscription_metadata.values()},
    )
    group.target = dict(ASSIGNORS[assignor_name(group, cfg)].assign(spec))
    group.assignment_epoch = group.group_epoch


def heartbeat(
    group: ConsumerGroup, req: HeartbeatRequest, topics: Topics, cfg: ConsumerGroupConfig, now_ms: int
) -> HeartbeatResult:
    """One ConsumerGroupHeartbeat with member_epoch >= 0 (leaves go to leave())."""
    member_id = req.member_id or str(uuid.uuid4())
    if member_id not in group.members and len(group.members) >= cfg.max_size and req.member_epoch == 0:
        raise KafkaError(ErrorCode.group_max_size_reached, "The consumer group has reached its maximum "
                         f"capacity of {cfg.max_size} members.")
    member = _find_member(group, req, member_id)
    if member.uses_classic_protocol and req.member_epoch != 0:
        raise KafkaError(ErrorCode.unknown_member_id, f"Member {member_id} of group {group.group_id} uses the "
                         "classic protocol.")
    reconciled = advance(group, member, _updated(member, req), topics, cfg, req.owned, now_ms)
    group.session_deadlines[member_id] = now_ms + cfg.session_timeout_ms
    full = req.member_epoch == 0 or (req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None
                                     and req.owned is not None)
    changed = reconciled.assigned != member.assigned or reconciled.member_epoch != req.member_epoch
    return HeartbeatResult(member_id=member_id, member_epoch=reconciled.member_epoch,
                           heartbeat_interval_ms=cfg.heartbeat_interval_ms,
                           assignment=reconciled.assigned if full or changed else None)


def advance(group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember, topics: Topics,
            cfg: ConsumerGroupConfig, owned: Assignment | None, now_ms: int) -> ConsumerGroupMember:
    """Steps 2-4 of a heartbeat (and of a classic member's JoinGroup): store the member's new
    subscription, bump the group epoch and recompute the target if needed, and reconcile the
    member one step; return it as it is now."""
    # A new member's subscription changes from nothing; a static member's new incarnation keeps
    # its predecessor's, so it takes over without a new group epoch (Kafka's hasMemberSubscriptionChanged).
    bump = (updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.subscribed_topic_regex != member.subscribed_topic_regex)
    group.put_member(updated)
    metadata = subscription_metadata(group, topics)
    if bump or metadata != group.subscription_metadata:
        group.subscription_metadata = metadata
        group.group_epoch += 1
    if group.group_epoch > group.assignment_epoch:
        update_target(group, topics, cfg)
    reconciled = reconcile(updated, group.assignment_epoch, group.target.get(member.member_id, {}),
                           group.owner_epoch(member.member_id), owned)
    if reconciled != updated:
        group.put_member(reconciled)
        if not reconciled.uses_classic_protocol:  # classic members have join and sync timers instead
            _rebalance_timer(group, reconciled, now_ms)
    return reconciled


def _rebalance_timer(group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int) -> None:
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        timeout = max(member.rebalance_timeout_ms, 0)
        group.rebalance_deadlines[member.member_id] = (now_ms + timeout, member.member_epoch)
    else:
        group.rebalance_deadlines.pop(member.member_id, None)


def leave(group: ConsumerGroup, req: HeartbeatRequest, cfg: ConsumerGroupConfig, now_ms: int) -> HeartbeatResult:
    """A heartbeat with epoch -1 (leave) or -2 (a static member leaving for a while)."""
    if req.instance_id is None:
        if req.member_id not in group.members:
            raise KafkaError(ErrorCode.unknown_member_id,
                             f"Member {req.member_id} is not a member of group {group.group_id}.")
        fence(group, req.member_id)
        return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)
    existing = group.static_member(req.instance_id)
    if existing is None:
        raise KafkaError(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.")
    if existing.member_id != req.member_id:
        raise KafkaError(ErrorCode.fenced_instance_id, f"Static member {req.member_id} with instance id "
                         f"{req.instance_id} was fenced by member {existing.member_id}.")
    if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        # Kept with its assignment for a session timeout, so a restart gets its partitions back.
        group.put_member(replace(existing, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={}))
        group.session_deadlines[existing.member_id] = now_ms + cfg.session_timeout_ms
        group.rebalance_deadlines.pop(existing.member_id, None)
        return HeartbeatResult(member_id=existing.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
    fence(group, existing.member_id)
    return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)


def fence(group: ConsumerGroup, member_id: str) -> None:
    """Remove a member and bump the group epoch so the others get its partitions."""
    if group.remove_member(member_id) is not None:
        group.group_epoch += 1


def expire(group: ConsumerGroup, topics: Topics, now_ms: int) -> list[str]:
    """Fence members whose session expired or that did not revoke in time; return their ids."""
    gone = [mid for mid, deadline in group.session_deadlines.items() if deadline <= now_ms]
    gone += [mid for mid, deadline in group.classic_deadlines.items() if deadline <= now_ms]
    for mid, (deadline, epoch) in group.rebalance_deadlines.items():
        member = group.members.get(mid)
        if deadline <= now_ms and member is not None and member.member_epoch == epoch \
                and member.state is MemberState.UNREVOKED_PARTITIONS:
            gone.append(mid)
    for mid in dict.fromkeys(gone):
        fence(group, mid)
    if gone:
        group.subscription_metadata = subscription_metadata(group, topics)
    return list(dict.fromkeys(gone))
