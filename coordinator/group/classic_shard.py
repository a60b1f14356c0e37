"""The classic-protocol group as a pure shard (Kafka's GroupMetadataManager: classicGroupJoin,
classicGroupSync, classicGroupHeartbeat, classicGroupLeave and the session, join and sync timers).

Each operation decides against a scratch copy of the group (GroupMembership.scratch), never the
live group, and returns a ClassicResult: the response; the group metadata record to write when
the step must be durable (a new generation's assignment, a static member's new member id, an
empty generation); the answers of JoinGroups and SyncGroups, parked or not, as effects; and the
decided group. The actor (operations.py) writes the record, replays it with the loader's code
(snapshot.replay_group) and then takes from the decided group what the record does not carry
(parked requests, deadlines, ids handed out: install_live); a step without a record is taken
whole (install). A failed write leaves the live group as it was; write_failed decides what then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from . import commands as c
from .log import GroupMetadataValue
from .member import JoinGroupResult, JoinParams, Outcome, SyncGroupResult
from .metadata import GroupMetadata
from .offset_shard import KeepAlive
from .snapshot import replay_group, to_value
from .state import GroupState

__all__ = ("ClassicResult", "LeaveAnswer", "Reply", "apply", "expire", "heartbeat", "join", "leave", "rebalance",
           "sync", "write_failed")

T = TypeVar("T")
LeaveAnswer = tuple[ErrorCode, list[ErrorCode]]  # the request's error, then each member's


@dataclass(frozen=True, slots=True)
class Reply:
    """An effect: answer a JoinGroup or SyncGroup once the decision is applied."""

    waiter: object
    result: JoinGroupResult | SyncGroupResult

    def with_error(self, error: ErrorCode) -> Reply:
        """The same request answered with error (the decision's record could not be written)."""
        if isinstance(self.result, JoinGroupResult):
            return Reply(self.waiter, JoinGroupResult(member_id=self.result.member_id, error=error))
        return Reply(self.waiter, SyncGroupResult(error=error))


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicResult(Generic[T]):
    response: T
    decided: GroupMetadata | None = None  # the group after the step; None: it does not change
    records: tuple[GroupMetadataValue, ...] = ()
    effects: tuple[Reply | KeepAlive, ...] = ()


def apply(group: GroupMetadata, result: ClassicResult[T], now_ms: int,
          error: ErrorCode | None = None) -> tuple[tuple[Reply | KeepAlive, ...], ClassicResult[None] | None]:
    """Apply a decision whose record was written (error None) or failed with error; return the
    effects to run and the follow-up decision to apply after them (after a failed write)."""
    decided, effects = result.decided, result.effects
    if decided is None:
        return effects, None
    if not result.records:
        group.install(decided)
    elif error is None:
        for value in result.records:
            replay_group(group, value, now_ms)
        group.install_live(decided)
    else:
        effects = tuple(e.with_error(error) if isinstance(e, Reply) else e for e in effects)
        if decided.state is not GroupState.EMPTY:
            return effects, _unanswered(write_failed(group, error, now_ms), effects)
        group.install(decided)  # Kafka keeps an empty generation whatever its write: no member is lost
    return effects, None


def _unanswered(result: ClassicResult[T], answered: Sequence[Reply | KeepAlive]) -> ClassicResult[T]:
    """result without the replies to requests answered already (syncs parked in the live group)."""
    waiters = [e.waiter for e in answered if isinstance(e, Reply)]
    kept = tuple(e for e in result.effects if not isinstance(e, Reply) or e.waiter not in waiters)
    return replace(result, effects=kept)


def _result(response: T, scratch: GroupMetadata, outcome: Outcome) -> ClassicResult[T]:
    return ClassicResult(
        response=response,
        decided=scratch,
        records=(to_value(scratch),) if outcome.store_group else (),
        effects=tuple(Reply(waiter, result) for waiter, result in outcome.replies),
    )


def join(group: GroupMetadata, params: JoinParams, now_ms: int, waiter: object) -> ClassicResult[None]:
    """A JoinGroup; an empty consumer group it reaches becomes a classic group."""
    scratch = group.scratch()
    scratch.consumer = None
    return _result(None, scratch, scratch.join(params, now_ms, waiter))


def sync(group: GroupMetadata, cmd: c.SyncGroup, now_ms: int) -> ClassicResult[None]:
    scratch = group.scratch()
    outcome = scratch.sync(
        member_id=cmd.member_id,
        generation_id=cmd.generation_id,
        group_instance_id=cmd.group_instance_id,
        protocol_type=cmd.protocol_type,
        protocol_name=cmd.protocol_name,
        assignments=cmd.assignments,
        now_ms=now_ms,
        waiter=cmd.reply,
    )
    return _result(None, scratch, outcome)


def heartbeat(group: GroupMetadata, member_id: str, generation_id: int,
              group_instance_id: str | None) -> ClassicResult[ErrorCode]:
    """A Heartbeat: no record and no copy; a member it names refreshes its session (KeepAlive),
    even when told to rejoin."""
    error = group.heartbeat_error(member_id, generation_id, group_instance_id)
    if error is not None:
        return ClassicResult(response=error)
    rejoin = group.state is GroupState.PREPARING_REBALANCE
    return ClassicResult(response=ErrorCode.rebalance_in_progress if rejoin else ErrorCode.none,
                         effects=(KeepAlive(group.group_id, member_id),))


def leave(group: GroupMetadata, members: Sequence[tuple[str, str | None]], now_ms: int) -> ClassicResult[LeaveAnswer]:
    scratch = group.scratch()
    try:
        errors, outcome = scratch.leave(members, now_ms)
    except KafkaError as exc:
        return ClassicResult(response=(exc.code, []))
    return _result((ErrorCode.none, errors), scratch, outcome)


def expire(group: GroupMetadata, now_ms: int) -> ClassicResult[None]:
    """The group's timer: pending member ids, sessions, join and sync deadlines due at now_ms."""
    scratch = group.scratch()
    return _result(None, scratch, scratch.tick(now_ms))


def rebalance(group: GroupMetadata, now_ms: int) -> ClassicResult[None]:
    """Start a rebalance now (a group just converted from the consumer protocol)."""
    scratch = group.scratch()
    return _result(None, scratch, scratch.rebalance(now_ms))


def write_failed(group: GroupMetadata, error: ErrorCode, now_ms: int) -> ClassicResult[None]:
    """After a decision's record failed to be written (group is as it was before it)."""
    scratch = group.scratch()
    return _result(None, scratch, scratch.write_failed(error, now_ms))
