"""GroupMembership: who is in a classic group, and the bookkeeping every rebalance step uses.

This is the data half of Kafka's GroupMetadata.scala (members, static members, leader, protocol
votes, subscribed topics); the protocol half (join, sync, heartbeat, leave, timers) is
GroupMetadata in metadata.py, which extends it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Self

from kio.schema.errors import ErrorCode

from .config import GroupConfig
from .consumer_group import ConsumerGroup
from .member import (
    JoinedMember,
    JoinGroupResult,
    JoinParams,
    MemberMetadata,
    Outcome,
    SyncGroupResult,
    parse_subscribed_topics,
)
from .offsets import OffsetStore
from .state import GroupState

__all__ = ("CONSUMER_PROTOCOL_TYPE", "GroupMembership")

CONSUMER_PROTOCOL_TYPE = "consumer"
_S = GroupState
# What a decision may change, installed from its scratch copy: all but the record's fields are
# live-only (parked requests, deadlines, ids handed out), so replay of the record leaves them.
_RECORD_FIELDS = ("generation_id", "protocol_type", "protocol_name", "leader_id", "members",
                  "static_members", "current_state_timestamp", "subscribed_topics")
_LIVE_FIELDS = ("state", "consumer", "pending_members", "pending_sync", "_join_deadline_ms",
                "_initial_delay_remaining_ms", "_new_member_added", "_sync_deadline_ms")
_LIVE_MEMBER_FIELDS = ("supported_protocols", "join_waiter", "sync_waiter", "is_new", "heartbeat_deadline_ms")


def _random_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class GroupMembership:
    def __init__(
        self,
        group_id: str,
        config: GroupConfig | None = None,
        *,
        now_ms: int = 0,
        new_member_id: Callable[[str], str] = _random_member_id,
    ) -> None:
        self.group_id = group_id
        self.config = config or GroupConfig()
        self.state = _S.EMPTY
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, int] = {}  # told MEMBER_ID_REQUIRED -> expiry
        self.pending_sync: set[str] = set()
        self.current_state_timestamp: int | None = now_ms
        self.subscribed_topics: frozenset[str] | None = None
        self.offsets = OffsetStore()
        # Set while the group speaks the consumer protocol (KIP-848): its members live there and
        # the classic fields above stay empty. Offsets are kept here for both types.
        self.consumer: ConsumerGroup | None = None
        self._new_member_id = new_member_id
        self._join_deadline_ms: int | None = None
        self._initial_delay_remaining_ms: int | None = None  # set while InitialDelayedJoin runs
        self._new_member_added = False
        self._sync_deadline_ms: int | None = None
        self._out = Outcome()
        self._shared: set[str] = set()  # members whose objects a scratch copy shares with the live group

    def _own(self, member_id: str) -> MemberMetadata:
        """The member, to change: in a scratch copy, first copied from the live group's object."""
        if member_id in self._shared:
            self._shared.discard(member_id)
            self.members[member_id] = replace(self.members[member_id])
        return self.members[member_id]

    def scratch(self) -> Self:
        """A copy for a decision to change (classic_shard.py); the live group stays as it is.
        Offsets and the consumer group are shared: no classic decision changes them."""
        other = copy.copy(self)
        other.members = dict(self.members)
        other._shared = set(self.members)  # copied on their first change (_own)
        other.static_members = dict(self.static_members)
        other.pending_members = dict(self.pending_members)
        other.pending_sync = set(self.pending_sync)
        other._out = Outcome()
        return other

    def install(self, decided: GroupMembership) -> None:
        """Take the classic state a decision left in its scratch copy (nothing was written)."""
        for name in (*_RECORD_FIELDS, *_LIVE_FIELDS):
            setattr(self, name, getattr(decided, name))
        decided._shared = set(decided.members)  # the live group's now: never change them there

    def install_live(self, decided: GroupMembership) -> None:
        """After the decision's record was replayed: take the state the record does not carry."""
        for name in _LIVE_FIELDS:
            setattr(self, name, getattr(decided, name))
        for member_id, member in self.members.items():
            source = decided.members[member_id]
            for name in _LIVE_MEMBER_FIELDS:
                setattr(member, name, getattr(source, name))

    @property
    def group_type(self) -> str:
        """Kafka's GroupType name, as ListGroups v5 reports it."""
        return "classic" if self.consumer is None else "consumer"

    def is_empty(self) -> bool:
        """No members of either protocol (Kafka's Group.isEmpty)."""
        if self.consumer is not None:
            return not self.consumer.members
        return self.state is _S.EMPTY

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.is_awaiting_join for m in self.members.values())

    def _supports_protocols(
        self, protocol_type: str, protocols: Sequence[tuple[str, bytes]]
    ) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self._candidate_protocols())

    def _candidate_protocols(self) -> set[str]:
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def _accepts_joining_member(self, member_id: str) -> bool:
        member = self.members.get(member_id)
        if self.state is _S.PREPARING_REBALANCE:
            awaiting = sum(m.is_awaiting_join for m in self.members.values())
            return (
                member is not None and member.is_awaiting_join
            ) or awaiting < self.config.max_size
        if self.state in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return member is not None or len(self.members) < self.config.max_size
        return True

    def _add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def _join_result(self, member: MemberMetadata, *, with_members: bool) -> JoinGroupResult:
        members: tuple[JoinedMember, ...] = ()
        if with_members and self.protocol_name is not None:
            members = tuple(
                JoinedMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata(self.protocol_name),
                )
                for m in self.members.values()
            )
        return JoinGroupResult(
            member_id=member.member_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id or "",
            members=members,
        )

    def _elect_joined_leader(self) -> bool:
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def _select_protocol(self) -> str:
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Ties go to the protocol that got its first vote earliest (Kafka leaves them unordered).
        return max(votes, key=lambda name: votes[name])

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or not self.members:
            return None
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscribed_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    def _sync_result(self, member: MemberMetadata) -> SyncGroupResult:
        return SyncGroupResult(
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            assignment=member.assignment,
        )

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.unknown_member_id
            return ErrorCode.fenced_instance_id if current != member_id else None
        return None if member_id in self.members else ErrorCode.unknown_member_id

    def _update_member(self, member: MemberMetadata, params: JoinParams, waiter: object) -> None:
        member = self._own(member.member_id)
        if member.join_waiter is not None:
            # A second join while one is parked: the first can never be answered usefully.
            self._reply(
                member.join_waiter,
                JoinGroupResult(member_id=member.member_id, error=ErrorCode.rebalance_in_progress),
            )
        member.supported_protocols = tuple(params.protocols)
        member.rebalance_timeout_ms = params.rebalance_timeout_ms
        member.session_timeout_ms = params.session_timeout_ms
        member.join_waiter = waiter

    def _swap_static_member(self, old_id: str, new_id: str, instance_id: str) -> MemberMetadata:
        """Give a static member a new member id; the old id is fenced from now on."""
        member = self._own(old_id)
        del self.members[old_id]
        # Whoever still waits under the old id is a duplicate of this instance: fence it now.
        if member.join_waiter is not None:
            self._reply(
                member.join_waiter,
                JoinGroupResult(member_id=old_id, error=ErrorCode.fenced_instance_id),
            )
            member.join_waiter = None
        if member.sync_waiter is not None:
            self._reply(member.sync_waiter, SyncGroupResult(error=ErrorCode.fenced_instance_id))
            member.sync_waiter = None
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        self.static_members[instance_id] = new_id
        return member

    def _reset_and_propagate_assignment_error(self, error: ErrorCode) -> None:
        for member_id in self.members:
            member = self._own(member_id)
            member.assignment = b""
            if member.sync_waiter is not None:
                self._reply(member.sync_waiter, SyncGroupResult(error=error))
                member.sync_waiter = None

    def _propagate_assignment(self, now_ms: int) -> None:
        for member_id in self.members:
            member = self._own(member_id)
            if member.sync_waiter is not None:
                self._reply(member.sync_waiter, self._sync_result(member))
                member.sync_waiter = None
                member.schedule_heartbeat(now_ms)

    def _remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id)
        if member_id in self._shared:
            self._shared.discard(member_id)  # the live group's object: leave it as it is
        else:
            member.join_waiter = member.sync_waiter = None
        iid = member.group_instance_id
        if iid is not None and self.static_members.get(iid) == member_id:
            del self.static_members[iid]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_sync.discard(member_id)

    def _reply(self, waiter: object, result: JoinGroupResult | SyncGroupResult) -> None:
        self._out.replies.append((waiter, result))

    def _take(self) -> Outcome:
        out, self._out = self._out, Outcome()
        return out
