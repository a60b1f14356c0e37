"""GroupMetadata: one classic consumer group, as a synchronous state object.

The rules follow Kafka's GroupCoordinator.scala / GroupMetadata.scala (classic protocol):

- JoinGroup parks each member until every known member has (re)joined or the rebalance timeout
  passes; then the generation is bumped, a protocol is chosen by vote among those every member
  supports, and every parked join is answered (only the leader gets the member list).
- A group rebalancing from Empty first waits group.initial.rebalance.delay.ms, extended while new
  members keep arriving during the first generation (Kafka's InitialDelayedJoin).
- SyncGroup from followers is parked until the leader's arrives with the assignment; the group
  must then be persisted (Outcome.store_group) before the replies go out.
- Members that miss their session timeout, members that do not rejoin within the rebalance
  timeout, and members that do not sync within it after a join completes are removed.
- Static members (group.instance.id) keep their place across restarts; a new join with the same
  instance id replaces the old member id, and the old id is FENCED_INSTANCE_ID from then on.

Time is an argument (now_ms) and never read from a clock: the actor calls tick(now_ms) at
next_deadline_ms(), and tests step time by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from .member import JoinGroupResult, JoinParams, MemberMetadata, Outcome, SyncGroupResult, SyncParams, identity
from .membership import CONSUMER_PROTOCOL_TYPE
from .rebalance import GroupRebalance
from .state import GroupState, transition_to

__all__ = ("GroupMetadata", "CONSUMER_PROTOCOL_TYPE")

_S = GroupState


class GroupMetadata(GroupRebalance):
    # -- queries ---------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When tick() next has work to do, or None if no timer is running."""
        deadlines = [m.heartbeat_deadline_ms for m in self.members.values()]
        deadlines.extend(self.pending_members.values())
        if self.state is _S.PREPARING_REBALANCE and self._join_deadline_ms is not None:
            deadlines.append(self._join_deadline_ms)
        if self.pending_sync and self._sync_deadline_ms is not None:
            deadlines.append(self._sync_deadline_ms)
        return min(deadlines, default=None)

    # -- JoinGroup -------------------------------------------------------------------------------

    def join(self, params: JoinParams, now_ms: int, waiter: object) -> Outcome:
        """Handle a JoinGroup; its reply (to waiter) may come now or in a later Outcome."""
        error = self._validate_join(params)
        if error is not None:
            self._reply(waiter, JoinGroupResult(member_id=params.member_id, error=error))
        elif not params.member_id:
            self._join_new_member(params, now_ms, waiter)
        else:
            self._join_known_member(params, now_ms, waiter)
        self._try_complete_join(now_ms)
        return self._take()

    def _validate_join(self, params: JoinParams) -> ErrorCode | None:
        cfg = self.config
        if (
            not cfg.min_session_timeout_ms
            <= params.session_timeout_ms
            <= cfg.max_session_timeout_ms
        ):
            return ErrorCode.invalid_session_timeout
        if self.state is _S.DEAD:
            return ErrorCode.coordinator_not_available
        if not self._supports_protocols(params.protocol_type, params.protocols):
            return ErrorCode.inconsistent_group_protocol
        if not self._accepts_joining_member(params.member_id):
            return ErrorCode.group_max_size_reached
        return None

    def _join_new_member(self, params: JoinParams, now_ms: int, waiter: object) -> None:
        member_id = self._new_member_id(params.client_id)
        instance_id = params.group_instance_id
        if instance_id is not None and instance_id in self.static_members:
            self._replace_static_member(
                self.static_members[instance_id], member_id, params, now_ms, waiter
            )
        elif instance_id is None and params.require_known_member_id:
            # KIP-394: the id is only handed out; the member counts once it rejoins with it.
            self.pending_members[member_id] = now_ms + params.session_timeout_ms
            self._reply(
                waiter, JoinGroupResult(member_id=member_id, error=ErrorCode.member_id_required)
            )
        else:
            self._add_member_and_rebalance(member_id, params, now_ms, waiter)

    def _join_known_member(self, params: JoinParams, now_ms: int, waiter: object) -> None:
        member_id = params.member_id
        if member_id in self.pending_members and params.group_instance_id is None:
            self._add_member_and_rebalance(member_id, params, now_ms, waiter)
            return
        error = self.validate_member(member_id, params.group_instance_id)
        if error is not None:
            self._reply(waiter, JoinGroupResult(member_id=member_id, error=error))
            return
        member = self.members[member_id]
        match self.state:
            case _S.COMPLETING_REBALANCE if member.matches(params.protocols):
                # A retry of a join whose response was lost: answer with the current generation.
                self._reply(
                    waiter, self._join_result(member, with_members=self.is_leader(member_id))
                )
            case _S.STABLE if not self.is_leader(member_id) and member.matches(params.protocols):
                self._reply(waiter, self._join_result(member, with_members=False))
            case _:
                self._update_member_and_rebalance(member, params, now_ms, waiter)

    def _add_member_and_rebalance(
        self, member_id: str, params: JoinParams, now_ms: int, waiter: object
    ) -> None:
        member = MemberMetadata(
            **identity(params, member_id=member_id),
            rebalance_timeout_ms=params.rebalance_timeout_ms,
            session_timeout_ms=params.session_timeout_ms,
            protocol_type=params.protocol_type,
            supported_protocols=tuple(params.protocols),
            join_waiter=waiter,
            is_new=True,
            heartbeat_deadline_ms=now_ms + self.config.new_member_join_timeout_ms,
        )
        if self.state is _S.PREPARING_REBALANCE and self.generation_id == 0:
            self._new_member_added = True
        self._add(member)
        self.pending_members.pop(member_id, None)
        self._maybe_prepare_rebalance(now_ms)

    def _update_member_and_rebalance(
        self, member: MemberMetadata, params: JoinParams, now_ms: int, waiter: object
    ) -> None:
        self._update_member(member, params, waiter)
        self._maybe_prepare_rebalance(now_ms)

    def _replace_static_member(
        self, old_id: str, new_id: str, params: JoinParams, now_ms: int, waiter: object
    ) -> None:
        old_leader = self.leader_id
        assert params.group_instance_id is not None
        member = self._swap_static_member(old_id, new_id, params.group_instance_id)
        member.heartbeat_deadline_ms = now_ms + params.session_timeout_ms
        self._update_member(member, params, waiter)
        match self.state:
            case _S.STABLE if self._select_protocol() == self.protocol_name:
                self._answer_static_rejoin(member, old_leader, params.supports_skip_assignment)
            case _S.STABLE | _S.COMPLETING_REBALANCE:
                # In CompletingRebalance the leader may already assign to the old id.
                self._maybe_prepare_rebalance(now_ms)
            case _:
                pass  # PreparingRebalance: the member simply waits with the others

    def _answer_static_rejoin(
        self, member: MemberMetadata, old_leader: str | None, skip_assignment: bool
    ) -> None:
        # A static member restarting into a stable group keeps its assignment: no rebalance.
        # Before JoinGroup v9 the old leader id is returned so that a restarted leader does not
        # believe it leads and recompute an assignment a stable group would never hand out.
        leads = self.is_leader(member.member_id)
        result = self._join_result(member, with_members=leads and skip_assignment)
        if skip_assignment:
            result = replace(result, skip_assignment=leads)
        else:
            result = replace(result, leader_id=old_leader or "")
        self._reply(member.join_waiter, result)
        member.join_waiter = None
        self._out.store_group = True

    # -- SyncGroup -------------------------------------------------------------------------------

    def sync(self, params: SyncParams, *, now_ms: int, waiter: object) -> Outcome:
        """Handle a SyncGroup; the leader's assignment completes every parked follower."""
        member_id = params.member_id
        error = self._validate_sync(params)
        if error is not None:
            self._reply(waiter, SyncGroupResult(error=error))
            return self._take()
        member = self._own(member_id)
        self.pending_sync.discard(member_id)
        if self.state is _S.STABLE:
            member.schedule_heartbeat(now_ms)
            self._reply(waiter, self._sync_result(member))
            return self._take()
        if member.sync_waiter is not None:
            # A second SyncGroup while one is parked: answer the first, as a second join is.
            self._reply(member.sync_waiter, SyncGroupResult(error=ErrorCode.rebalance_in_progress))
        member.sync_waiter = waiter
        if self.is_leader(member_id):
            for mid in self.members:
                self._own(mid).assignment = params.assignments.get(mid, b"")
            self.state = transition_to(self.state, _S.STABLE, self.group_id)
            self._propagate_assignment(now_ms)
            self._out.store_group = True
        return self._take()

    def _validate_sync(self, params: SyncParams) -> ErrorCode | None:
        if self.state is _S.DEAD:
            return ErrorCode.coordinator_not_available
        error = self.validate_member(params.member_id, params.group_instance_id)
        if error is not None:
            return error
        if params.generation_id != self.generation_id:
            return ErrorCode.illegal_generation
        if (params.protocol_type is not None and params.protocol_type != self.protocol_type) or (
            params.protocol_name is not None and params.protocol_name != self.protocol_name
        ):
            return ErrorCode.inconsistent_group_protocol
        if self.state is _S.EMPTY:
            return ErrorCode.unknown_member_id
        if self.state is _S.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return None

    def write_failed(self, error: ErrorCode, now_ms: int) -> Outcome:
        """A decided group record could not be written (this group is as it was before that
        decision): parked syncs get the error and the group rebalances again (Kafka's
        resetAndPropagateAssignmentWithError, then maybePrepareRebalanceOrCompleteJoin)."""
        self._reset_and_propagate_assignment_error(error)
        self._maybe_prepare_rebalance(now_ms)
        return self._take()

    # -- Heartbeat and LeaveGroup ------------------------------------------------------------------

    def heartbeat_error(
        self, member_id: str, generation_id: int, group_instance_id: str | None
    ) -> ErrorCode | None:
        """Why a Heartbeat is refused (its session is not refreshed then), or None."""
        if self.state is _S.DEAD:
            return ErrorCode.coordinator_not_available
        error = self.validate_member(member_id, group_instance_id)
        if error is None and generation_id != self.generation_id:
            error = ErrorCode.illegal_generation
        if error is None and self.state is _S.EMPTY:
            error = ErrorCode.unknown_member_id
        return error

    def heartbeat(
        self, member_id: str, generation_id: int, group_instance_id: str | None, now_ms: int
    ) -> None:
        """Refresh the member's session; raise KafkaError with what the client must do."""
        error = self.heartbeat_error(member_id, generation_id, group_instance_id)
        if error is not None:
            raise KafkaError(error)
        self._own(member_id).schedule_heartbeat(now_ms)
        if self.state is _S.PREPARING_REBALANCE:
            raise KafkaError(ErrorCode.rebalance_in_progress)

    def leave(
        self, members: Sequence[tuple[str, str | None]], now_ms: int
    ) -> tuple[list[ErrorCode], Outcome]:
        """Remove (member_id, group_instance_id) pairs; an empty member id names a static member."""
        if self.state is _S.DEAD:
            raise KafkaError(ErrorCode.coordinator_not_available)
        return [self._leave_one(mid, iid, now_ms) for mid, iid in members], self._take()

    def _leave_one(self, member_id: str, group_instance_id: str | None, now_ms: int) -> ErrorCode:
        if not member_id:
            current = self.static_members.get(group_instance_id) if group_instance_id else None
            if current is None:
                return ErrorCode.unknown_member_id
            self._remove_member_and_update(current, now_ms)
            return ErrorCode.none
        if member_id in self.pending_members:
            del self.pending_members[member_id]
            self._try_complete_join(now_ms)
            return ErrorCode.none
        error = self.validate_member(member_id, group_instance_id)
        if error is not None:
            return error
        self._remove_member_and_update(member_id, now_ms)
        return ErrorCode.none

    def _remove_member_and_update(self, member_id: str, now_ms: int) -> None:
        member = self.members[member_id]
        # Answer whatever it still waits on, so that a live client rejoins from scratch.
        if member.join_waiter is not None:
            self._reply(
                member.join_waiter, JoinGroupResult(member_id="", error=ErrorCode.unknown_member_id)
            )
        if member.sync_waiter is not None:
            self._reply(member.sync_waiter, SyncGroupResult(error=ErrorCode.unknown_member_id))
        self._remove_member(member_id)
        if self.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(now_ms)
        else:
            self._try_complete_join(now_ms)

    # -- timers ------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> Outcome:
        """Expire whatever is due at now_ms: pending ids, sessions, join and sync deadlines."""
        for member_id, deadline in list(self.pending_members.items()):
            if now_ms >= deadline:
                del self.pending_members[member_id]
                self._try_complete_join(now_ms)
        for member in list(self.members.values()):
            if member.member_id in self.members and now_ms >= member.heartbeat_deadline_ms:
                self._expire_session(member, now_ms)
        if (
            self.state is _S.PREPARING_REBALANCE
            and self._join_deadline_ms is not None
            and now_ms >= self._join_deadline_ms
        ):
            self._on_join_deadline(now_ms)
        if (
            self.pending_sync
            and self._sync_deadline_ms is not None
            and now_ms >= self._sync_deadline_ms
        ):
            self._on_sync_deadline(now_ms)
        return self._take()

    def _expire_session(self, member: MemberMetadata, now_ms: int) -> None:
        # A member parked in a join or sync is bounded by the rebalance timeout instead,
        # except a brand-new member, which gets new_member_join_timeout_ms.
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            self._own(member.member_id).schedule_heartbeat(now_ms)
            return
        self._remove_member_and_update(member.member_id, now_ms)

    def _on_sync_deadline(self, now_ms: int) -> None:
        self._sync_deadline_ms = None
        for member_id in list(self.pending_sync):
            self._remove_member(member_id)
        self._maybe_prepare_rebalance(now_ms)
