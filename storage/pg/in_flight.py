"""A partition log that goes on sequencing while its earlier groups are being committed.

The owner task of a PostgreSQL partition log hands each group's write to the committer and takes
its next command at once (a producer with several requests in flight to one partition is
sequenced without waiting a flush and commit per request); the committer commits a partition's
writes in their order, or a later one not at all (storage/pg/write_order.py). Each group's
appends are answered when its write is, and only after every group before it: the log sees the
outcomes in the order it sequenced them, though a later failure may be known first (its
object's PUT failed). Every other command runs with nothing in flight, as when each group waited
for its commit.

The producer state ends a transaction when its marker is sequenced (the next appends are checked
against it), but the LSO passes the transaction only once the marker is committed, as Kafka moves
it only once the marker is appended: a read_committed consumer never reads a transaction whose
commit marker may still be lost.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from protocol.errors import ErrorCode, KafkaError

from ..api import TopicPartition
from ..log_actor import Acks, answer_appends
from ..log_config import LogConfig
from ..producer_state import CompletedTxn
from ..sequenced_log import SequencedLog
from .group_commit import PartitionWrite

__all__ = ("Flight", "PipelinedLog")


@dataclass(frozen=True, slots=True)
class Flight:
    write: PartitionWrite | None  # None: only duplicates, answered as the write before them
    committed: asyncio.Future[bool]  # the committer's answer
    acks: Acks


class PipelinedLog(SequencedLog):
    """Subclasses build a group's write (_send), apply its commit (_committed) and fence."""

    def __init__(self, tp: TopicPartition, config: LogConfig) -> None:
        super().__init__(tp, config)
        self._flights: deque[Flight] = deque()  # writes sent, not yet answered, in order
        self._stale = False  # a write's outcome is unknown: rebuild before the next append
        self._ending: deque[CompletedTxn] = deque()  # ended by a marker sequenced, not yet committed

    @property
    def last_stable_offset(self) -> int:
        lso = super().last_stable_offset
        if not self._ending:
            return lso
        return min(lso, max(min(t.first_offset for t in self._ending), self._log_start_offset))

    def _ended(self, completed: CompletedTxn) -> None:
        """A marker sequenced now ended a transaction: it holds the LSO until its commit."""
        self._ending.append(completed)

    def _markers_committed(self) -> None:
        hw = self.high_watermark
        while self._ending and self._ending[0].last_offset < hw:
            self._ending.popleft()

    def _send(self, after: asyncio.Future[bool] | None) -> Flight | None:
        """The group's write handed to the committer (after: the answer it must follow), with no
        acks yet; None if the group wrote nothing."""
        raise NotImplementedError

    def _fence(self, why: str) -> KafkaError:
        """Stop serving: another broker leads the partition (NOT_LEADER_OR_FOLLOWER)."""
        raise NotImplementedError

    def _outcome(self, committed: asyncio.Future[bool]) -> KafkaError | None:
        """None if committed; else the error its appends get, the log marked stale (its state is
        re-read before the next append) and fenced if the write lost the lead."""
        exc = (KafkaError(ErrorCode.kafka_storage_error, "the broker stopped before the append was written")
               if committed.cancelled() else committed.exception())
        if exc is None and committed.result():
            return None
        self._stale = True
        if exc is None:
            return self._fence("its leader epoch or next offset changed in the database")
        if not isinstance(exc, KafkaError):
            return KafkaError(ErrorCode.kafka_storage_error, f"{self.tp}: the append failed: {exc!r}")
        if exc.code is ErrorCode.not_leader_or_follower:  # not confirmed within the lease
            return self._fence(str(exc))
        return exc

    def _committed(self, write: PartitionWrite) -> None:
        """The write is in the database: move the high watermark."""
        raise NotImplementedError

    def _sent_offset(self, committed: int) -> int:
        """The next offset the database holds once every write in flight is committed."""
        for flight in reversed(self._flights):
            if flight.write is not None:
                return flight.write.next_offset
        return committed

    async def _acknowledge(self, acks: Acks) -> None:
        after = self._flights[-1].committed if self._flights else None
        flight = self._send(after)
        if flight is not None:
            flight = Flight(flight.write, flight.committed, list(acks))
        elif after is not None:  # only duplicates: written, or not, with the write before them
            flight = Flight(None, after, list(acks))
        else:
            answer_appends(acks, None)
            return
        self._flights.append(flight)
        flight.committed.add_done_callback(self._land)

    async def _before_message(self, acks: Acks) -> None:
        if acks:  # the appends before this message go first
            await self._acknowledge(acks)
            acks.clear()
        await self._settle()

    async def _settle(self) -> None:
        """Return once every write sent is answered and its appends with it."""
        while self._flights:
            await asyncio.wait({f.committed for f in self._flights})
            self._land()

    def _land(self, _: object = None) -> None:
        while self._flights and self._flights[0].committed.done():
            flight = self._flights.popleft()
            error = self._outcome(flight.committed)
            if error is None and flight.write is not None:
                self._committed(flight.write)
                self._markers_committed()
            answer_appends(flight.acks, error)
            if error is None:
                self._wake_waiters()
                self._after_acks_soon()

