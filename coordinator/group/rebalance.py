"""A classic group's rebalance, as Kafka's GroupCoordinator.scala runs it: PreparingRebalance
waits for every known member to rejoin (or the rebalance timeout; from Empty first the initial
delay, extended while new members arrive), then the generation is bumped, a protocol chosen, and
every parked JoinGroup answered; CompletingRebalance then waits for the SyncGroups.

GroupMetadata (metadata.py) builds on this with the requests that start and end a rebalance.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from .member import Outcome
from .membership import GroupMembership
from .state import GroupState, can_transition, transition_to

__all__ = ("GroupRebalance",)

_S = GroupState


class GroupRebalance(GroupMembership):
    def rebalance(self, now_ms: int) -> Outcome:
        """Start a rebalance now (a group just converted from the consumer protocol)."""
        self._maybe_prepare_rebalance(now_ms)
        return self._take()

    def _maybe_prepare_rebalance(self, now_ms: int) -> None:
        if can_transition(self.state, _S.PREPARING_REBALANCE):
            self._prepare_rebalance(now_ms)

    def _prepare_rebalance(self, now_ms: int) -> None:
        if self.state is _S.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(ErrorCode.rebalance_in_progress)
        self._sync_deadline_ms = None
        self.pending_sync.clear()
        delay = self.config.initial_rebalance_delay_ms
        if self.state is _S.EMPTY and delay > 0:
            self._initial_delay_remaining_ms = max(self.rebalance_timeout_ms - delay, 0)
            self._join_deadline_ms = now_ms + delay
        else:
            self._initial_delay_remaining_ms = None
            self._join_deadline_ms = now_ms + self.rebalance_timeout_ms
        self.state = transition_to(self.state, _S.PREPARING_REBALANCE, self.group_id)
        self._try_complete_join(now_ms)

    def _try_complete_join(self, now_ms: int) -> None:
        if (
            self.state is _S.PREPARING_REBALANCE
            and self._initial_delay_remaining_ms is None
            and self.all_members_joined()
        ):
            self._complete_join(now_ms)

    def _on_join_deadline(self, now_ms: int) -> None:
        remaining = self._initial_delay_remaining_ms
        if remaining is not None:
            delay = self.config.initial_rebalance_delay_ms
            if self._new_member_added and remaining > 0:
                self._new_member_added = False
                self._initial_delay_remaining_ms = max(remaining - delay, 0)
                self._join_deadline_ms = now_ms + min(delay, remaining)
                return
            self._initial_delay_remaining_ms = None
        self._complete_join(now_ms)

    def _complete_join(self, now_ms: int) -> None:
        for member in list(self.members.values()):
            if not member.is_awaiting_join and not member.is_static:
                self._remove_member(member.member_id)
        if self.members and not self._elect_joined_leader():
            # Only static members that have not come back: wait another rebalance timeout for
            # them (their session timeout will remove them if they are gone for good).
            self._join_deadline_ms = now_ms + self.rebalance_timeout_ms
            return
        self._init_next_generation(now_ms)
        if self.state is _S.EMPTY:
            self._out.store_group = True
            return
        for member_id in self.members:
            member = self._own(member_id)
            if member.join_waiter is not None:
                result = self._join_result(member, with_members=self.is_leader(member.member_id))
                self._reply(member.join_waiter, result)
                member.join_waiter = None
            member.is_new = False
            member.schedule_heartbeat(now_ms)
            self.pending_sync.add(member.member_id)
        self._sync_deadline_ms = now_ms + self.rebalance_timeout_ms

    def _init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self._select_protocol()
            self.state = transition_to(self.state, _S.COMPLETING_REBALANCE, self.group_id)
        else:
            self.protocol_name = None
            self.state = transition_to(self.state, _S.EMPTY, self.group_id)
        self.subscribed_topics = self.compute_subscribed_topics()
        self.current_state_timestamp = now_ms
        self._join_deadline_ms = None
        self.pending_sync.clear()
