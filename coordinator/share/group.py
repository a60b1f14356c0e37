"""A share group's membership (KIP-932; Kafka's ShareGroup and shareGroupHeartbeat), pure.

Members join with ShareGroupHeartbeat at epoch 0 naming the topics they subscribe to, heartbeat
with their epoch, and leave with -1. A change of members, of subscriptions or of the subscribed
topics' partitions bumps the group epoch and computes a new target assignment (assignor.py); a
member at an older epoch then moves to the group epoch with its new assignment at once (share
group members own nothing, so nothing is revoked first). A member heard from within
share.session.timeout.ms stays; one that is not is removed as if it had left. States are Kafka's:
Empty (no members) and Stable.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from protocol.errors import ErrorCode, KafkaError

from .assignor import Assignment, assign

__all__ = ("HeartbeatResult", "ShareGroup", "ShareHeartbeat", "ShareMember", "TopicInfo", "validate")

LEAVE_EPOCH: Final = -1


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareHeartbeat:
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    # None: unchanged since the member last heard it
    assignment: Assignment | None


@dataclass(slots=True, kw_only=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assignment: Assignment = field(default_factory=dict)
    deadline_ms: int = 0


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # the subscribed topics as the last assignment saw them
    topics_seen: dict[str, TopicInfo] = field(default_factory=dict)
    # share-partitions initialized (Kafka's InitializeShareGroupState), the only ones assigned:
    # topic id -> partition count; and those being initialized: topic id -> (count, when that
    # started, ms; 0 if not known, as after a restart)
    initialized: dict[uuid.UUID, int] = field(default_factory=dict)
    initializing: dict[uuid.UUID, tuple[int, int]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Empty" if not self.members else "Stable"

    def subscribed_topics(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}

    def heartbeat(self, hb: ShareHeartbeat, topics: Mapping[str, TopicInfo], now_ms: int, session_timeout_ms: int,
                  max_size: int) -> HeartbeatResult:
        """One ShareGroupHeartbeat; KafkaError for a fenced, unknown or refused member."""
        validate(hb)
        member = self.members.get(hb.member_id)
        if hb.member_epoch == LEAVE_EPOCH:
            if member is not None:
                self.remove(hb.member_id)
            return HeartbeatResult(member_id=hb.member_id, member_epoch=LEAVE_EPOCH, assignment=None)
        if member is None:
            if hb.member_epoch != 0:
                raise KafkaError(ErrorCode.unknown_member_id,
                                 f"Member {hb.member_id} is not a member of group {self.group_id}.")
            if len(self.members) >= max_size:
                raise KafkaError(ErrorCode.group_max_size_reached,
                                 f"The share group has reached its maximum capacity of {max_size} members.")
            # its subscription (required on joining) bumps the group epoch once, in _update
            member = self.members[hb.member_id] = ShareMember(member_id=hb.member_id)
        elif hb.member_epoch not in (0, member.member_epoch):
            which = "greater" if hb.member_epoch > member.member_epoch else "smaller"
            raise KafkaError(ErrorCode.fenced_member_epoch,
                             f"The share group member has a {which} member epoch ({hb.member_epoch}) than the one "
                             f"known by the group coordinator ({member.member_epoch}). The member must abandon all "
                             "its partitions and rejoin.")
        full = hb.member_epoch == 0
        self._update(member, hb)
        member.deadline_ms = now_ms + session_timeout_ms
        self._refresh(topics)
        if member.member_epoch != self.assignment_epoch or full:
            member.member_epoch = self.assignment_epoch
            member.assignment = self.target.get(member.member_id, {})
            return HeartbeatResult(member_id=member.member_id, member_epoch=member.member_epoch,
                                   assignment=member.assignment)
        return HeartbeatResult(member_id=member.member_id, member_epoch=member.member_epoch, assignment=None)

    def _update(self, member: ShareMember, hb: ShareHeartbeat) -> None:
        member.rack_id = hb.rack_id if hb.rack_id is not None else member.rack_id
        member.client_id, member.client_host = hb.client_id, hb.client_host
        if hb.subscribed_topic_names is not None:
            names = tuple(sorted(set(hb.subscribed_topic_names)))
            if names != member.subscribed_topic_names:
                member.subscribed_topic_names = names
                self.group_epoch += 1

    def _refresh(self, topics: Mapping[str, TopicInfo]) -> None:
        """A new target assignment when the group epoch moved or a subscribed topic changed."""
        seen = {name: info for name in self.subscribed_topics() if (info := topics.get(name)) is not None}
        if seen != self.topics_seen:  # Kafka bumps the epoch for the subscribed topics' metadata too
            self.topics_seen = seen
            self.group_epoch += 1
        elif self.assignment_epoch == self.group_epoch and self._initialized_unassigned():
            self.group_epoch += 1
        if self.assignment_epoch == self.group_epoch:
            return
        counts = {info.topic_id: min(info.partitions, self.initialized.get(info.topic_id, 0)) for info in seen.values()}
        counts = {topic_id: count for topic_id, count in counts.items() if count > 0}
        subscriptions = {m.member_id: frozenset(t for n in m.subscribed_topic_names if n in seen
                                                and (t := seen[n].topic_id) in counts)
                         for m in self.members.values()}
        self.target = assign(subscriptions, counts, {m.member_id: m.assignment for m in self.members.values()})
        self.assignment_epoch = self.group_epoch

    def _initialized_unassigned(self) -> bool:
        """Kafka's initializedAssignmentPending: the target assignment does not hold exactly the
        initialized partitions of a subscribed topic (some were initialized since it was made)."""
        assigned: dict[uuid.UUID, set[int]] = {}
        for assignment in self.target.values():
            for topic_id, partitions in assignment.items():
                assigned.setdefault(topic_id, set()).update(partitions)
        return bool(self.members) and any(
            assigned.get(info.topic_id, set()) != set(range(min(info.partitions, done)))
            for info in self.topics_seen.values() if (done := self.initialized.get(info.topic_id, 0)))

    def start_initializing(self, now_ms: int, retry_ms: int) -> dict[uuid.UUID, tuple[range, int]]:
        """The subscribed share-partitions to initialize now, with their start offset: those not
        initialized, unless their initialization started less than retry_ms ago (Kafka's
        subscribedTopicsChangeMap, group.share.initialize.retry.interval.ms). A topic new to the
        group starts where share.auto.offset.reset says (-1), partitions added to a topic it
        already had at offset 0, as Kafka 4.4 initializes them. They are recorded as
        initializing; the caller initializes them at their share coordinators, then calls
        initialized_now() or initialize_failed(). Until then they are not assigned, so a member
        gets them at a later heartbeat, by when the members that joined meanwhile share them."""
        out: dict[uuid.UUID, tuple[range, int]] = {}
        for info in self.topics_seen.values():
            done = self.initialized.get(info.topic_id, 0)
            _, since = self.initializing.get(info.topic_id, (0, -retry_ms))
            if done < info.partitions and now_ms - since >= retry_ms:
                known = info.topic_id in self.initialized or info.topic_id in self.initializing
                self.initializing[info.topic_id] = (info.partitions, now_ms)
                out[info.topic_id] = (range(done, info.partitions), 0 if known else -1)
        return out

    def initialized_now(self, topic_id: uuid.UUID, partitions: range) -> None:
        """Their share coordinators initialized the partitions: they are assigned from the next
        heartbeat on (which moves the group epoch, _initialized_unassigned)."""
        self.initialized[topic_id] = max(partitions.stop, self.initialized.get(topic_id, 0))
        count, _ = self.initializing.get(topic_id, (0, 0))
        if count <= partitions.stop:
            self.initializing.pop(topic_id, None)

    def initialize_failed(self, topic_id: uuid.UUID, partitions: range) -> None:
        """Kafka's uninitializeShareGroupState: the next heartbeat tries them again."""
        if self.initializing.get(topic_id, (0, 0))[0] == partitions.stop:
            self.initializing.pop(topic_id, None)

    def remove(self, member_id: str) -> None:
        """The member left or its session timed out."""
        del self.members[member_id]
        self.target.pop(member_id, None)
        self.group_epoch += 1

    def expired(self, now_ms: int) -> list[str]:
        return [m.member_id for m in self.members.values() if m.deadline_ms <= now_ms]

    def next_deadline_ms(self) -> int | None:
        return min((m.deadline_ms for m in self.members.values()), default=None)


def validate(hb: ShareHeartbeat) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid."""
    if not hb.member_id.strip():
        raise KafkaError(ErrorCode.invalid_request, "MemberId can't be empty.")
    if hb.member_epoch < LEAVE_EPOCH:
        raise KafkaError(ErrorCode.invalid_request, "MemberEpoch is invalid.")
    if hb.member_epoch == 0 and not hb.subscribed_topic_names:
        raise KafkaError(ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
