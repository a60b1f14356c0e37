"""One share-partition's record states (KIP-932; Kafka's SharePartition), pure and synchronous.

Every offset from the share-partition start offset (SPSO) up to the end offset (the next offset
never fetched, SPEO) is tracked: AVAILABLE (to be delivered again), ACQUIRED (locked by one
member until its lock expires), ACKNOWLEDGED or ARCHIVED (done). Offsets at or past the end offset
are available and never delivered. The start offset moves over done records, so the window holds
at most `max_in_flight` offsets (group.share.partition.max.record.locks): past that nothing new is
acquired until acknowledgements move the start.

Acquisition counts a delivery. A release, a lock timeout or the end of the member's session makes a
record available again, unless it has been delivered `delivery_count_limit` times: then it is
archived, as Kafka's SharePartition does. ACCEPT acknowledges, REJECT and GAP archive, RELEASE
releases, RENEW (KIP-1222) restarts the lock. With a dead-letter queue (`dead_letter_queue`, KIP-1191)
a REJECT or a delivery limit reached makes the record ARCHIVING instead: it holds the start offset
until `archive_dead_letters` archives it once its dead letter is written (GAP archives directly).
Offsets the log has no deliverable record for (control batches, aborted transactions under
read_committed, compacted gaps) are archived when the window reaches them and never delivered.

What survives a restart is `snapshot()`: the start offset and the window's states, acquired records
written as available with their delivery count (Kafka's persister writes no ACQUIRED state), and
ARCHIVING ones as ARCHIVING, so their dead letters are written after a restart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, NamedTuple

from protocol.errors import ErrorCode, KafkaError

__all__ = ("AcknowledgeType", "AcquiredRange", "DeadLetterRange", "LogBatch", "RecordState", "SharePartitionState",
           "StateBatch")

_NO_DEADLINE: Final = 1 << 62


class RecordState(IntEnum):
    """Kafka's RecordState ids, as ShareSnapshot/ShareUpdate records carry them."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # on its way to the dead-letter topic (KIP-1191), then ARCHIVED
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """ShareFetch/ShareAcknowledge AcknowledgeTypes."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_DONE: Final = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


class LogBatch(NamedTuple):
    """A stored batch's offsets and whether its records may be delivered (not a control batch,
    not an aborted transaction under read_committed)."""

    base_offset: int
    last_offset: int
    deliverable: bool


class AcquiredRange(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


class DeadLetterRange(NamedTuple):
    """ARCHIVING offsets of one delivery count and cause: rejected by the client, else out of deliveries."""

    first_offset: int
    last_offset: int
    delivery_count: int
    rejected: bool


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets in one state with one delivery count: the persisted form."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(slots=True)
class _Record:
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    deadline_ms: int = _NO_DEADLINE
    rejected: bool = False  # ARCHIVING by a REJECT (not by the delivery limit)


class SharePartitionState:
    def __init__(self, start_offset: int, *, delivery_count_limit: int, max_in_flight: int) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.dead_letter_queue = False  # the group has a DLQ topic and share.version is 2
        self._records: dict[int, _Record] = {}  # every offset in [start_offset, end_offset)
        # deliveries and their outcomes since this state was made (metrics): acquired,
        # acknowledged, released (available again) and archived (rejected or out of deliveries)
        self.outcomes: Counter[str] = Counter()

    # -- acquiring -----------------------------------------------------------------------------

    def acquire_available(self, member_id: str, now_ms: int, lock_ms: int, max_records: int) -> list[AcquiredRange]:
        """Lock up to max_records of the window's available records for member_id."""
        taken: list[tuple[int, int]] = []
        for offset in range(self.start_offset, self.end_offset):
            if len(taken) >= max_records:
                break
            record = self._records[offset]
            if record.state is RecordState.AVAILABLE:
                self._lock(record, member_id, now_ms + lock_ms)
                taken.append((offset, record.delivery_count))
        return _ranges(taken)

    def acquire_new(self, batches: Iterable[LogBatch], member_id: str, now_ms: int, lock_ms: int,
                    max_records: int, whole_batches: bool = True) -> list[AcquiredRange]:
        """Lock records read from the log at the end offset on. With whole_batches (Kafka's
        batch-optimized acquire mode) a batch is taken whole even past max_records; the window
        never grows past max_in_flight offsets."""
        taken: list[tuple[int, int]] = []
        for batch in batches:
            if batch.last_offset < self.end_offset:
                continue
            if len(taken) >= max_records or self.end_offset - self.start_offset >= self.max_in_flight:
                break
            self._archive_gap(batch.base_offset)
            room = self.start_offset + self.max_in_flight - self.end_offset
            last = batch.last_offset if whole_batches else min(batch.last_offset, self.end_offset
                                                                + max_records - len(taken) - 1)
            last = min(last, self.end_offset + room - 1)
            for offset in range(self.end_offset, last + 1):
                if batch.deliverable:
                    record = _Record(RecordState.AVAILABLE, 0)
                    self._lock(record, member_id, now_ms + lock_ms)
                    taken.append((offset, 1))
                else:
                    record = _Record(RecordState.ARCHIVED, 0)
                self._records[offset] = record
            self.end_offset = last + 1
        self._advance()
        return _ranges(taken)

    def _archive_gap(self, upto: int) -> None:
        """Offsets before the next batch that the log has no record for (compacted or deleted)."""
        for offset in range(self.end_offset, upto):
            self._records[offset] = _Record(RecordState.ARCHIVED, 0)
        self.end_offset = max(self.end_offset, upto)

    def _lock(self, record: _Record, member_id: str, deadline_ms: int) -> None:
        record.state, record.member_id, record.deadline_ms = RecordState.ACQUIRED, member_id, deadline_ms
        record.delivery_count += 1
        self.outcomes["acquired"] += 1

    # -- acknowledging and releasing -----------------------------------------------------------

    def acknowledge(self, member_id: str, first: int, last: int, types: Sequence[int], now_ms: int,
                    lock_ms: int) -> None:
        """One acknowledgement batch: one type for the whole range, or one per offset. Raises
        INVALID_RECORD_STATE (nothing changed) unless every offset is acquired by member_id."""
        if last < first or len(types) not in (1, last - first + 1):
            raise KafkaError(ErrorCode.invalid_request,
                             f"acknowledgement batch {first}-{last} has {len(types)} acknowledge types")
        kinds = [_ack_type(t) for t in types]
        for offset in range(first, last + 1):
            record = self._records.get(offset) if self.start_offset <= offset < self.end_offset else None
            if record is None or record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                raise KafkaError(ErrorCode.invalid_record_state,
                                 f"The record at offset {offset} is not acquired by member {member_id}")
        for i, offset in enumerate(range(first, last + 1)):
            self._apply(self._records[offset], kinds[0] if len(kinds) == 1 else kinds[i], now_ms + lock_ms)
        self._advance()

    def _apply(self, record: _Record, kind: AcknowledgeType, renew_deadline_ms: int) -> None:
        if kind is AcknowledgeType.RENEW:
            record.deadline_ms = renew_deadline_ms
        elif kind is AcknowledgeType.ACCEPT:
            self._finish(record, RecordState.ACKNOWLEDGED)
            self.outcomes["acknowledged"] += 1
        elif kind is AcknowledgeType.RELEASE:
            self._release(record)
        elif kind is AcknowledgeType.REJECT:
            self._archive(record, rejected=True)
        else:  # GAP
            self._finish(record, RecordState.ARCHIVED)
            self.outcomes["archived"] += 1

    def _archive(self, record: _Record, *, rejected: bool) -> None:
        """Rejected or out of deliveries: ARCHIVING while a dead letter is due, else ARCHIVED."""
        self._finish(record, RecordState.ARCHIVING if self.dead_letter_queue else RecordState.ARCHIVED)
        record.rejected = rejected
        self.outcomes["archived"] += 1

    @staticmethod
    def _finish(record: _Record, state: RecordState) -> None:
        record.state, record.member_id, record.deadline_ms = state, None, _NO_DEADLINE

    def _release(self, record: _Record) -> None:
        if record.delivery_count >= self.delivery_count_limit:
            self._archive(record, rejected=False)
        else:
            self._finish(record, RecordState.AVAILABLE)
            self.outcomes["released"] += 1

    def release_member(self, member_id: str) -> int:
        """The member's session ended or it left: its acquired records go back. Returns how many."""
        return self._release_where(lambda r: r.member_id == member_id)

    def expire_locks(self, now_ms: int) -> int:
        """Records whose acquisition lock ran out by now_ms go back. Returns how many."""
        return self._release_where(lambda r: r.deadline_ms <= now_ms)

    def _release_where(self, matches: object) -> int:
        released = 0
        for record in self._records.values():
            if record.state is RecordState.ACQUIRED and matches(record):  # type: ignore[operator]
                self._release(record)
                released += 1
        self._advance()
        return released

    def next_deadline_ms(self) -> int | None:
        deadlines = [r.deadline_ms for r in self._records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    # -- dead letters ----------------------------------------------------------------------------

    def dead_letters(self) -> list[DeadLetterRange]:
        """The ARCHIVING records, as runs of one delivery count and cause."""
        out: list[DeadLetterRange] = []
        for offset, record in self._records.items():
            if record.state is not RecordState.ARCHIVING:
                continue
            last = out[-1] if out else None
            if last is not None and last.last_offset == offset - 1 and \
                    (last.delivery_count, last.rejected) == (record.delivery_count, record.rejected):
                out[-1] = last._replace(last_offset=offset)
            else:
                out.append(DeadLetterRange(offset, offset, record.delivery_count, record.rejected))
        return sorted(out)

    def archive_dead_letters(self, first: int, last: int) -> None:
        """Their dead letters are written (or cannot be): ARCHIVING records in first..last are done."""
        for offset in range(max(first, self.start_offset), min(last + 1, self.end_offset)):
            record = self._records[offset]
            if record.state is RecordState.ARCHIVING:
                record.state = RecordState.ARCHIVED
        self._advance()

    # -- the window ------------------------------------------------------------------------------

    def _advance(self) -> None:
        while self.start_offset < self.end_offset and self._records[self.start_offset].state in _DONE:
            del self._records[self.start_offset]
            self.start_offset += 1

    def move_start(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) leave the window."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            del self._records[offset]
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._advance()

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: forget every state and start again at start_offset."""
        self._records.clear()
        self.start_offset = self.end_offset = start_offset

    def has_available(self) -> bool:
        return any(r.state is RecordState.AVAILABLE for r in self._records.values())

    def window_full(self) -> bool:
        return self.end_offset - self.start_offset >= self.max_in_flight

    def done_in_window(self) -> int:
        return sum(1 for r in self._records.values() if r.state in _DONE)

    def states(self) -> Iterator[tuple[int, RecordState, int]]:
        """(offset, state, delivery count) over the window, in offset order."""
        for offset in range(self.start_offset, self.end_offset):
            record = self._records[offset]
            yield offset, record.state, record.delivery_count

    # -- persistence -------------------------------------------------------------------------------

    def snapshot(self) -> list[StateBatch]:
        """The window as runs of equal persisted state; acquired records count as available."""
        out: list[StateBatch] = []
        for offset, state, count in self.states():
            persisted = RecordState.AVAILABLE if state is RecordState.ACQUIRED else state
            if out and out[-1].last_offset == offset - 1 and (out[-1].state, out[-1].delivery_count) == (persisted,
                                                                                                       count):
                out[-1] = StateBatch(out[-1].first_offset, offset, persisted, count)
            else:
                out.append(StateBatch(offset, offset, persisted, count))
        return out

    @classmethod
    def restore(cls, start_offset: int, batches: Iterable[StateBatch], *, delivery_count_limit: int,
                max_in_flight: int, dead_letter_queue: bool = False) -> SharePartitionState:
        """The state a snapshot describes; offsets between its batches were never delivered. A
        record that was held comes back available, or archived (ARCHIVING with a dead-letter
        queue) once delivered to the limit, as its release would have left it. An ARCHIVING record
        counts as rejected below the limit, as Kafka's resumed archiving does."""
        state = cls(start_offset, delivery_count_limit=delivery_count_limit, max_in_flight=max_in_flight)
        state.dead_letter_queue = dead_letter_queue
        for batch in sorted(batches, key=lambda b: b.first_offset):
            persisted = RecordState.AVAILABLE if batch.state is RecordState.ACQUIRED else batch.state
            if persisted is RecordState.AVAILABLE and batch.delivery_count >= delivery_count_limit:
                persisted = RecordState.ARCHIVING if dead_letter_queue else RecordState.ARCHIVED
            rejected = persisted is RecordState.ARCHIVING and batch.delivery_count < delivery_count_limit
            for offset in range(max(batch.first_offset, state.end_offset), batch.last_offset + 1):
                state._records[offset] = _Record(persisted, batch.delivery_count, rejected=rejected)
                state.end_offset = offset + 1
        state._fill_unknown()
        state._advance()
        return state

    def _fill_unknown(self) -> None:
        for offset in range(self.start_offset, self.end_offset):
            self._records.setdefault(offset, _Record(RecordState.AVAILABLE, 0))


def _ack_type(value: int) -> AcknowledgeType:
    try:
        return AcknowledgeType(value)
    except ValueError:
        raise KafkaError(ErrorCode.invalid_request, f"unknown acknowledge type {value}") from None


def _ranges(taken: list[tuple[int, int]]) -> list[AcquiredRange]:
    """Contiguous offsets of one delivery count, as ShareFetch's AcquiredRecords."""
    out: list[AcquiredRange] = []
    for offset, count in taken:
        if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count:
            out[-1] = AcquiredRange(out[-1].first_offset, offset, count)
        else:
            out.append(AcquiredRange(offset, offset, count))
    return out
