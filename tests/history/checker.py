"""A history checker in the manner of Jepsen's Kafka checker (jepsen.tests.kafka), pure: no
clients, no broker, no clock.

A history is what producers sent (every value unique), what became of it (acknowledged, failed or
unknown; for a transactional write, what became of its transaction), and whole-partition reads
taken at read_committed or read_uncommitted between faults and at the end. `check()` names every
anomaly it finds:

- lost: an acknowledged write (an acked idempotent send, or a write of a committed transaction),
  or a record an earlier read showed, missing from a final read;
- aborted-read: a write of an aborted transaction, or a failed send, visible at read_committed (a
  failed send anywhere);
- duplicate: one value at two offsets of a partition (within one read or across reads);
- torn: a transaction that a final read_committed read shows partly;
- reordered: two writes of one producer to one partition at offsets in the opposite order of their
  sends;
- reused-offset: two different values at one offset of a partition across reads (before and after
  restarts);
- nonmonotonic: offsets that do not increase within one read of a partition;
- unknown-value: a value nobody wrote.

The cycle anomalies of Jepsen's checker (G0, G1c) need transactions that also read; this workload
only writes, so they are out of scope here."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

TopicPartition = tuple[str, int]


class Outcome(Enum):
    """For a send: the broker acknowledged it / it definitely did not happen / no one knows. For a
    transaction: committed / aborted / the commit's fate is unknown."""

    ACKNOWLEDGED = "acknowledged"
    FAILED = "failed"
    UNKNOWN = "unknown"


class Isolation(Enum):
    READ_COMMITTED = "read_committed"
    READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True, slots=True, kw_only=True)
class Write:
    value: bytes
    tp: TopicPartition
    producer: str  # one producer instance: its sends to one partition keep their order
    txn: str | None = None  # the transaction it belongs to; None for an idempotent send


@dataclass(frozen=True, slots=True, kw_only=True)
class Read:
    """Every record of the listed partitions from offset 0, as (offset, value) in the order read.
    A final read is taken once every writer has finished, to the end of each partition: what it
    lacks is lost."""

    label: str
    isolation: Isolation
    final: bool
    records: Mapping[TopicPartition, Sequence[tuple[int, bytes]]]


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: str
    detail: str


@dataclass(slots=True)
class History:
    """What the workload records; thread-safe, since every client runs in its own thread."""

    writes: list[Write] = field(default_factory=list)
    send_outcomes: dict[bytes, Outcome] = field(default_factory=dict)
    txn_outcomes: dict[str, Outcome] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, write: Write) -> None:
        with self._lock:
            self.writes.append(write)

    def settle_send(self, value: bytes, outcome: Outcome) -> None:
        with self._lock:
            self.send_outcomes[value] = outcome

    def settle_txn(self, txn: str, outcome: Outcome) -> None:
        with self._lock:
            self.txn_outcomes[txn] = outcome

    def add_read(self, read: Read) -> None:
        with self._lock:
            self.reads.append(read)

    def outcome(self, write: Write) -> Outcome:
        if write.txn is not None:
            return self.txn_outcomes.get(write.txn, Outcome.UNKNOWN)
        return self.send_outcomes.get(write.value, Outcome.UNKNOWN)

    def summary(self) -> dict[str, int]:
        sends = Counter(self.outcome(w).value for w in self.writes if w.txn is None)
        txns = Counter(o.value for o in self.txn_outcomes.values())
        return {"writes": len(self.writes), "reads": len(self.reads),
                **{f"sends {k}": n for k, n in sorted(sends.items())},
                **{f"transactions {k}": n for k, n in sorted(txns.items())}}


def check(history: History) -> list[Anomaly]:
    by_value = {w.value: w for w in history.writes}
    return [*_unknown_values(history, by_value), *_nonmonotonic(history), *_offsets_and_duplicates(history),
            *_lost(history), *_aborted_reads(history, by_value), *_torn(history),
            *_reordered(history, by_value)]


def _unknown_values(history: History, by_value: Mapping[bytes, Write]) -> Iterable[Anomaly]:
    for read in history.reads:
        for tp, records in read.records.items():
            for offset, value in records:
                write = by_value.get(value)
                if write is None or write.tp != tp:
                    yield Anomaly("unknown-value", f"{read.label}: {value!r} at {tp}@{offset} was never sent there")


def _nonmonotonic(history: History) -> Iterable[Anomaly]:
    for read in history.reads:
        for tp, records in read.records.items():
            offsets = [offset for offset, _ in records]
            for before, after in zip(offsets, offsets[1:], strict=False):
                if after <= before:
                    yield Anomaly("nonmonotonic", f"{read.label}: {tp} offset {after} read after {before}")


def _offsets_and_duplicates(history: History) -> Iterable[Anomaly]:
    values_at: dict[tuple[TopicPartition, int], set[bytes]] = defaultdict(set)
    offsets_of: dict[tuple[TopicPartition, bytes], set[int]] = defaultdict(set)
    for read in history.reads:
        for tp, records in read.records.items():
            for offset, value in records:
                values_at[tp, offset].add(value)
                offsets_of[tp, value].add(offset)
    for (tp, offset), values in sorted(values_at.items()):
        if len(values) > 1:
            yield Anomaly("reused-offset", f"{tp}@{offset} held {sorted(values)}")
    for (tp, value), offsets in offsets_of.items():
        if len(offsets) > 1:
            yield Anomaly("duplicate", f"{value!r} at {tp} offsets {sorted(offsets)}")


def _visible(read: Read) -> set[bytes]:
    return {value for records in read.records.values() for _, value in records}


def _lost(history: History) -> Iterable[Anomaly]:
    """A final read must hold every acknowledged write, and every record an earlier read showed at
    the same isolation level or a stricter one (a record once visible never goes away: nothing here
    deletes, and a crash keeps what the page cache holds)."""
    for read in (r for r in history.reads if r.final):
        seen = _visible(read)
        for w in history.writes:
            if w.tp in read.records and history.outcome(w) is Outcome.ACKNOWLEDGED and w.value not in seen:
                what = f"of committed transaction {w.txn}" if w.txn else "acknowledged"
                yield Anomaly("lost", f"{read.label} ({read.isolation.value}): {w.value!r} {what} at {w.tp}")
        for earlier in history.reads:
            if not earlier.final and _at_least_as_strict(earlier.isolation, read.isolation):
                yield from _lost_since(earlier, read, seen)


def _at_least_as_strict(a: Isolation, b: Isolation) -> bool:
    return a is Isolation.READ_COMMITTED or b is Isolation.READ_UNCOMMITTED


def _lost_since(earlier: Read, read: Read, seen: set[bytes]) -> Iterable[Anomaly]:
    for tp, records in earlier.records.items():
        for offset, value in records:
            if tp in read.records and value not in seen:
                yield Anomaly("lost", f"{read.label} ({read.isolation.value}): {value!r} that "
                                      f"{earlier.label} ({earlier.isolation.value}) read at {tp}@{offset}")


def _aborted_reads(history: History, by_value: Mapping[bytes, Write]) -> Iterable[Anomaly]:
    for read in history.reads:
        for value in _visible(read):
            write = by_value.get(value)
            if write is None or history.outcome(write) is not Outcome.FAILED:
                continue
            if write.txn is None:
                yield Anomaly("aborted-read", f"{read.label} ({read.isolation.value}): failed send {value!r}")
            elif read.isolation is Isolation.READ_COMMITTED:
                yield Anomaly("aborted-read", f"{read.label}: {value!r} of aborted transaction {write.txn}")


def _torn(history: History) -> Iterable[Anomaly]:
    txn_writes: dict[str, list[Write]] = defaultdict(list)
    for w in history.writes:
        if w.txn is not None:
            txn_writes[w.txn].append(w)
    for read in history.reads:
        if not read.final or read.isolation is not Isolation.READ_COMMITTED:
            continue
        seen = _visible(read)
        for txn, writes in txn_writes.items():
            checked = [w for w in writes if w.tp in read.records]
            shown = sum(w.value in seen for w in checked)
            if 0 < shown < len(checked):
                yield Anomaly("torn", f"{read.label}: transaction {txn} ({history.txn_outcomes.get(txn)}) "
                                      f"shows {shown} of its {len(checked)} writes")


def _reordered(history: History, by_value: Mapping[bytes, Write]) -> Iterable[Anomaly]:
    sent_index = {w.value: i for i, w in enumerate(history.writes)}  # the order each producer sent in
    for read in history.reads:
        for tp, records in read.records.items():
            last: dict[str, tuple[int, bytes]] = {}
            seen: set[bytes] = set()
            for offset, value in records:
                write = by_value.get(value)
                if write is None or value in seen:
                    continue  # reported as unknown-value or duplicate
                seen.add(value)
                previous = last.get(write.producer)
                if previous is not None and sent_index[previous[1]] > sent_index[value]:
                    yield Anomaly("reordered", f"{read.label}: {tp} has {value!r} at {offset} after "
                                               f"{previous[1]!r} at {previous[0]}, sent the other way round")
                last[write.producer] = (offset, value)
