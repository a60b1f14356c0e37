"""The classic-protocol group as a pure shard (Kafka's GroupMetadataManager: classicGroupJoin,
classicGroupSync, classicGroupHeartbeat, classicGroupLeave and the session, join and sync timers).

Each operation decides against a scratch copy of the group (GroupMembership.scratch), never the
live group, and returns a ClassicResult: the response; the group metadata record to write when
the step must be durable (a new generation's assignment, a static member's new member id, an
empty generation); the answers of JoinGroups and SyncGroups, parked or not, as effects; and the
decided group. written() is the step as the runtime applies it (operations.py): the runtime
writes the record, replays it with the loader's code (replay.py) and runs the effects, Install
first, which takes from the decided group what the record does not carry (parked requests,
deadlines, ids handed out: install_live), or, for a step without a record, all of it (install).
A failed write leaves the live group as it was; failed() says what then (write_failed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

from protocol.errors import KafkaError

from ..runtime import CoordinatorResult
from . import commands as c
from .log import GroupMetadataValue
from .member import JoinGroupResult, JoinParams, Outcome, SyncGroupResult
from .metadata import GroupMetadata
from .offset_shard import KeepAlive
from .records import ClassicRecord, GroupRecord
from .snapshot import to_value
from .state import GroupState

__all__ = ("ClassicEffect", "ClassicResult", "Install", "LeaveAnswer", "Reply", "expire", "failed", "heartbeat", "join",
           "leave", "rebalance", "sync", "write_failed", "written")

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


@dataclass(frozen=True, slots=True)
class Install:
    """An effect, the first a step runs: the live group takes the decided one's state, all of it
    (nothing was written) or, once the record is replayed, what the record does not carry."""

    group: GroupMetadata
    decided: GroupMetadata
    replayed: bool

    def run(self) -> None:
        if self.replayed:
            self.group.install_live(self.decided)
        else:
            self.group.install(self.decided)


ClassicEffect = Install | Reply | KeepAlive


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicResult(Generic[T]):
    response: T
    decided: GroupMetadata | None = None  # the group after the step; None: it does not change
    records: tuple[GroupMetadataValue, ...] = ()
    effects: tuple[Reply | KeepAlive, ...] = ()


def written(group: GroupMetadata, result: ClassicResult[T]) -> CoordinatorResult[GroupRecord, ClassicEffect, T]:
    """The step for the runtime to apply: its record, then Install and the answers."""
    install = () if result.decided is None else (Install(group, result.decided, bool(result.records)),)
    return CoordinatorResult(response=result.response,
                             records=tuple(ClassicRecord(group.group_id, value) for value in result.records),
                             effects=(*install, *result.effects))


def failed(group: GroupMetadata, result: ClassicResult[T], now_ms: int,
           error: ErrorCode) -> tuple[tuple[ClassicEffect, ...], ClassicResult[None] | None]:
    """The step's record failed with error: the effects to run (the answers carry the error) and
    the decision to apply after them: the rebalance write_failed starts, but an empty generation
    is kept whatever its write (Kafka's: no member is lost)."""
    effects = tuple(e.with_error(error) if isinstance(e, Reply) else e for e in result.effects)
    assert result.decided is not None, "a step that writes decided a group"
    if result.decided.state is not GroupState.EMPTY:
        return effects, _unanswered(write_failed(group, error, now_ms), effects)
    return (Install(group, result.decided, replayed=False), *effects), None


def _unanswered(result: ClassicResult[T], answered: Sequence[ClassicEffect]) -> ClassicResult[T]:
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
    return _result(None, scratch, scratch.sync(cmd.params, now_ms=now_ms, waiter=cmd.reply))


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
