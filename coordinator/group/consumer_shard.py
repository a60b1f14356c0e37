"""A consumer group (KIP-848) as a pure shard, as Kafka's GroupMetadataManager does for them.

decide() runs a change -- a ConsumerGroupHeartbeat or its leave, a classic member's JoinGroup or
LeaveGroup, the session and rebalance timeouts -- on a copy of the group and returns a
CoordinatorResult: the records that take the group there (consumer_persist.changes), the answer,
and one effect, Timers: the deadlines and the subscribed topics' metadata, which no record
carries. The live group is untouched. The runtime appends the records, replays them with
apply_consumer_record (replay.py), which the loader runs over __consumer_offsets too, and runs the
effect; a write that fails leaves the group as it was. apply() is the same without the write.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from protocol.errors import KafkaError

from ..runtime import ApiError, CoordinatorResult
from .consumer_group import ConsumerGroup
from .consumer_log import MEMBER_METADATA
from .consumer_persist import ConsumerRecord, apply_consumer_record, changes

__all__ = ("ConsumerResult", "Timers", "apply", "created", "decide", "fenced", "postpone", "preview", "replay")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Timers:
    """The group's timers and subscribed topics as a decision left them: in memory only (Kafka
    schedules its timers in the decision and derives the subscription metadata from the topics)."""

    group_id: str
    session_deadlines: Mapping[str, int]
    rebalance_deadlines: Mapping[str, tuple[int, int]]
    classic_deadlines: Mapping[str, int]
    subscription_metadata: Mapping[str, tuple[uuid.UUID, int]]

    @classmethod
    def of(cls, group: ConsumerGroup) -> Timers:
        return cls(group.group_id, dict(group.session_deadlines), dict(group.rebalance_deadlines),
                   dict(group.classic_deadlines), dict(group.subscription_metadata))

    def apply(self, group: ConsumerGroup) -> None:
        group.session_deadlines, group.classic_deadlines = dict(self.session_deadlines), dict(self.classic_deadlines)
        group.rebalance_deadlines = dict(self.rebalance_deadlines)
        group.subscription_metadata = dict(self.subscription_metadata)


ConsumerResult = CoordinatorResult[ConsumerRecord, Timers, T]


def decide(group: ConsumerGroup, change: Callable[[ConsumerGroup], T]) -> CoordinatorResult[ConsumerRecord, Timers, T]:
    """What `change` does to the group, as records and an answer; a KafkaError it raises is the
    answer (an ApiError) and writes nothing."""
    scratch = group.copy()
    try:
        response = change(scratch)
    except KafkaError as exc:
        return CoordinatorResult(response=ApiError.of(exc))
    return CoordinatorResult(response=response, records=tuple(changes(group, scratch)), effects=(Timers.of(scratch),))


def created(built: ConsumerGroup) -> CoordinatorResult[ConsumerRecord, Timers, None]:
    """The records and timers of a group built whole (a classic group's upgrade, Kafka's
    ConsumerGroup.fromClassicGroup): applied to an empty group they rebuild it."""
    empty = ConsumerGroup(built.group_id)
    return CoordinatorResult(response=None, records=tuple(changes(empty, built)), effects=(Timers.of(built),))


def replay(group: ConsumerGroup, record: ConsumerRecord) -> None:
    apply_consumer_record(group, record.key, record.value)


def apply(group: ConsumerGroup, result: CoordinatorResult[ConsumerRecord, Timers, T]) -> None:
    """The decision's records are written: replay them, then set the timers."""
    for record in result.records:
        replay(group, record)
    for effect in result.effects:
        effect.apply(group)


def preview(group: ConsumerGroup, result: CoordinatorResult[ConsumerRecord, Timers, T]) -> ConsumerGroup:
    """The group as it will be once the result is applied (the live group is left alone)."""
    out = group.copy()
    apply(out, result)
    return out


def fenced(result: CoordinatorResult[ConsumerRecord, Timers, T]) -> set[str]:
    """The members the decision removes."""
    return {r.key.member_id or "" for r in result.records if r.key.record_type == MEMBER_METADATA and r.value is None}


def postpone(group: ConsumerGroup, now_ms: int, until_ms: int) -> None:
    """Move the deadlines that have passed to until_ms: the fencing they caused was not written,
    and is tried again then (Kafka's coordinator timer retries a failed write after a backoff)."""
    for deadlines in (group.session_deadlines, group.classic_deadlines):
        for mid, deadline in deadlines.items():
            if deadline <= now_ms:
                deadlines[mid] = until_ms
    for mid, (deadline, epoch) in group.rebalance_deadlines.items():
        if deadline <= now_ms:
            group.rebalance_deadlines[mid] = (until_ms, epoch)
