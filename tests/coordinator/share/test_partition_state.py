"""The share-partition record state machine (coordinator/share/partition_state.py), pure: acquisition
under a lock, acknowledgement types, release on lock timeout and member leave, archiving at the
delivery limit, the in-flight window, and the persisted snapshot; then random operations
(hypothesis stateful) against the rules every state must keep."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from coordinator.share.partition_state import (
    AcknowledgeType,
    AcquiredRange,
    LogBatch,
    RecordState,
    SharePartitionState,
    StateBatch,
)
from protocol.errors import ErrorCode, KafkaError

A, ACCEPT, RELEASE, REJECT, GAP, RENEW = ("a", AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                          AcknowledgeType.REJECT, AcknowledgeType.GAP, AcknowledgeType.RENEW)
LOCK = 1000


def fresh(limit: int = 3, window: int = 100) -> SharePartitionState:
    return SharePartitionState(0, delivery_count_limit=limit, max_in_flight=window)


def log(*spans: tuple[int, int], deliverable: bool = True) -> list[LogBatch]:
    return [LogBatch(base, last, deliverable) for base, last in spans]


def test_new_records_are_acquired_whole_batches_and_counted_as_a_delivery() -> None:
    s = fresh()
    assert s.acquire_new(log((0, 4), (5, 9)), A, 0, LOCK, max_records=3) == [AcquiredRange(0, 4, 1)]
    assert (s.start_offset, s.end_offset) == (0, 5)
    assert s.acquire_new(log((5, 9)), "b", 0, LOCK, max_records=2, whole_batches=False) == [AcquiredRange(5, 6, 1)]
    assert s.end_offset == 7


def test_accept_moves_the_start_offset_and_release_redelivers_with_a_higher_count() -> None:
    s = fresh()
    s.acquire_new(log((0, 4)), A, 0, LOCK, 10)
    s.acknowledge(A, 0, 1, [ACCEPT], 0, LOCK)
    s.acknowledge(A, 2, 4, [RELEASE, REJECT, RELEASE], 0, LOCK)
    assert s.start_offset == 2
    assert [(o, st_) for o, st_, _ in s.states()] == [(2, RecordState.AVAILABLE), (3, RecordState.ARCHIVED),
                                                     (4, RecordState.AVAILABLE)]
    assert s.acquire_available("b", 0, LOCK, 10) == [AcquiredRange(2, 2, 2), AcquiredRange(4, 4, 2)]


def test_only_the_member_holding_a_record_may_acknowledge_it_and_nothing_changes_otherwise() -> None:
    s = fresh()
    s.acquire_new(log((0, 3)), A, 0, LOCK, 10)
    with pytest.raises(KafkaError) as e:
        s.acknowledge("b", 0, 1, [ACCEPT], 0, LOCK)
    assert e.value.code is ErrorCode.invalid_record_state
    with pytest.raises(KafkaError) as e:
        s.acknowledge(A, 2, 5, [ACCEPT], 0, LOCK)  # 4 and 5 were never delivered
    assert e.value.code is ErrorCode.invalid_record_state
    assert [st_ for _, st_, _ in s.states()] == [RecordState.ACQUIRED] * 4
    with pytest.raises(KafkaError) as e:
        s.acknowledge(A, 0, 3, [ACCEPT, REJECT], 0, LOCK)  # two types for four offsets
    assert e.value.code is ErrorCode.invalid_request


def test_lock_timeout_and_member_leave_release_and_the_limit_archives() -> None:
    s = fresh(limit=2)
    s.acquire_new(log((0, 1)), A, 0, LOCK, 10)
    assert s.next_deadline_ms() == LOCK
    assert s.expire_locks(LOCK - 1) == 0
    assert s.expire_locks(LOCK) == 2
    assert s.acquire_available("b", LOCK, LOCK, 10) == [AcquiredRange(0, 1, 2)]
    assert s.release_member("b") == 2  # the second delivery was the last: archived
    assert (s.start_offset, s.end_offset, s.has_available()) == (2, 2, False)


def test_renew_restarts_the_lock() -> None:
    s = fresh()
    s.acquire_new(log((0, 0)), A, 0, LOCK, 10)
    s.acknowledge(A, 0, 0, [RENEW], 900, LOCK)
    assert s.expire_locks(LOCK) == 0
    assert s.next_deadline_ms() == 900 + LOCK


def test_control_batches_and_gaps_are_archived_unseen_and_the_window_is_bounded() -> None:
    s = fresh(window=4)
    got = s.acquire_new([LogBatch(0, 0, False), LogBatch(3, 9, True)], A, 0, LOCK, 100)
    assert got == [AcquiredRange(3, 3, 1)]  # 0 a marker, 1-2 compacted away, then room for one
    assert (s.start_offset, s.end_offset, s.window_full()) == (3, 4, False)
    assert s.acquire_new(log((3, 9)), A, 0, LOCK, 100) == [AcquiredRange(4, 6, 1)]
    assert s.window_full()
    assert s.acquire_new(log((3, 9)), A, 0, LOCK, 100) == []


def test_snapshot_keeps_acknowledgements_and_turns_locks_into_available_records() -> None:
    s = fresh()
    s.acquire_new(log((0, 5)), A, 0, LOCK, 10)
    s.acknowledge(A, 1, 2, [ACCEPT], 0, LOCK)
    s.acknowledge(A, 3, 3, [RELEASE], 0, LOCK)
    snap = s.snapshot()
    assert snap == [StateBatch(0, 0, RecordState.AVAILABLE, 1), StateBatch(1, 2, RecordState.ACKNOWLEDGED, 1),
                    StateBatch(3, 5, RecordState.AVAILABLE, 1)]
    again = SharePartitionState.restore(0, snap, delivery_count_limit=3, max_in_flight=100)
    assert again.acquire_available("b", 0, LOCK, 10) == [AcquiredRange(0, 0, 2), AcquiredRange(3, 5, 2)]
    assert again.end_offset == 6


def test_reset_and_log_start_moves() -> None:
    s = fresh()
    s.acquire_new(log((0, 9)), A, 0, LOCK, 10)
    s.move_start(4)
    assert (s.start_offset, s.end_offset) == (4, 10)
    s.reset(2)
    assert (s.start_offset, s.end_offset, list(s.states())) == (2, 2, [])


MEMBERS = st.sampled_from(["a", "b", "c"])


class SharePartitionMachine(RuleBasedStateMachine):
    """Random acquisitions, acknowledgements, releases and lock timeouts; the rules that must hold."""

    def __init__(self) -> None:
        super().__init__()
        self.s = SharePartitionState(0, delivery_count_limit=3, max_in_flight=20)
        self.now = 0
        self.log_end = 0
        self.accepted: set[int] = set()

    @rule(n=st.integers(1, 6))
    def produce(self, n: int) -> None:
        self.log_end += n

    @rule(member=MEMBERS, max_records=st.integers(1, 10))
    def fetch(self, member: str, max_records: int) -> None:
        got = self.s.acquire_available(member, self.now, LOCK, max_records)
        batches = [LogBatch(o, min(o + 2, self.log_end - 1), True) for o in range(0, self.log_end, 3)]
        got += self.s.acquire_new(batches, member, self.now, LOCK, max_records)
        offsets = [o for r in got for o in range(r.first_offset, r.last_offset + 1)]
        assert len(offsets) == len(set(offsets))
        assert not self.accepted & set(offsets), "an accepted record came back"
        assert all(1 <= r.delivery_count <= 3 for r in got)

    @rule(member=MEMBERS, kind=st.sampled_from(list(AcknowledgeType)), data=st.data())
    def acknowledge(self, member: str, kind: AcknowledgeType, data: st.DataObject) -> None:
        held = [o for o, state, _ in self.s.states() if state is RecordState.ACQUIRED]
        if not held:
            return
        offset = data.draw(st.sampled_from(held))
        try:
            self.s.acknowledge(member, offset, offset, [kind], self.now, LOCK)
        except KafkaError as exc:
            assert exc.code is ErrorCode.invalid_record_state
            return
        if kind is AcknowledgeType.ACCEPT:
            self.accepted.add(offset)

    @rule(ms=st.integers(0, 1500))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        self.s.expire_locks(self.now)

    @rule(member=MEMBERS)
    def member_leaves(self, member: str) -> None:
        self.s.release_member(member)

    @rule()
    def restart(self) -> None:
        self.s = SharePartitionState.restore(self.s.start_offset, self.s.snapshot(), delivery_count_limit=3,
                                             max_in_flight=20)

    @invariant()
    def window_holds(self) -> None:
        states = list(self.s.states())
        assert self.s.end_offset - self.s.start_offset == len(states) <= 20
        if states:
            assert states[0][1] not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        for _, state, count in states:
            assert count <= 3
            if state is RecordState.AVAILABLE:
                assert count < 3, "a record delivered to the limit must be archived"


TestSharePartitionMachine = SharePartitionMachine.TestCase
TestSharePartitionMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
