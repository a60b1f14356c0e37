"""An LSO that explains itself: a warning when one open transaction holds a partition back too long.

read_committed consumers cannot read past a partition's last stable offset, which stops at the
first offset of its oldest open transaction. When that one transaction has held the LSO back for
longer than transaction.lso.warning.threshold.ms, the broker says so in one WARNING line with what
an operator needs: the partition, how far the LSO lags the high watermark, who the producer is
(transactional id if the coordinator knows the producer id, its epoch), when the transaction
started and when the coordinator will time it out, and the kafka-transactions command that aborts
it. The line repeats once per threshold period while it lasts, and one INFO line says when it
clears. A producer the coordinator does not know (or a partition its transaction does not list) is
a hanging transaction: no timeout will ever end it, and the warning says so.

The check runs every quarter threshold (at most every 5 s) over the partitions that have an open
transaction (LogSource.open_transactions(): one emptiness check per partition without one); its
decisions are made by LsoWatch, pure and clock-free, so they can be tested without a loop.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.api import LogSource, OpenTransaction, TopicPartition

from ..runtime import wall_clock_ms
from ..tasks import TaskSupervisor
from .state import TxnState

if TYPE_CHECKING:
    from .coordinator import TransactionCoordinator

__all__ = ("LsoMonitor", "LsoWatch", "TxnOwner")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnOwner:
    """What the transaction coordinator knows of a producer id with an open transaction."""

    transactional_id: str
    state: str
    timeout_ms: int
    deadline_ms: int | None  # when the coordinator aborts it; None when it will not
    lists_partition: bool


@dataclass(slots=True)
class _Warned:
    txn: OpenTransaction
    last_warned_ms: int


class LsoWatch:
    """Which partitions are due a warning and which have cleared (pure; the caller logs)."""

    def __init__(self, threshold_ms: int) -> None:
        self.threshold_ms = threshold_ms
        self._warned: dict[TopicPartition, _Warned] = {}

    def check(
        self, now_ms: int, open_txns: Mapping[TopicPartition, list[OpenTransaction]],
    ) -> tuple[list[tuple[TopicPartition, OpenTransaction]], list[tuple[TopicPartition, OpenTransaction]]]:
        """(partitions to warn about with the transaction holding each, partitions cleared)."""
        cleared = []
        for tp, held in list(self._warned.items()):
            txns = open_txns.get(tp)
            if not txns or _key(txns[0]) != _key(held.txn):
                cleared.append((tp, held.txn))
                del self._warned[tp]
        due = []
        for tp, txns in open_txns.items():
            oldest = txns[0]  # the one the LSO stops at
            if now_ms - oldest.start_timestamp < self.threshold_ms:
                continue
            warned = self._warned.get(tp)
            if warned is None:
                self._warned[tp] = _Warned(oldest, now_ms)
                due.append((tp, oldest))
            elif now_ms - warned.last_warned_ms >= self.threshold_ms:
                warned.last_warned_ms = now_ms
                due.append((tp, oldest))
        return due, cleared


def _key(txn: OpenTransaction) -> tuple[int, int]:
    return txn.producer_id, txn.first_offset


def _offsets(n: int) -> str:
    return f"{n} offset" if n == 1 else f"{n} offsets"


def _wall(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")


def owner_of(coordinator: TransactionCoordinator | None, producer_id: int, tp: TopicPartition) -> TxnOwner | None:
    """The transactional id of producer_id, from the transaction coordinator's state."""
    if coordinator is None:
        return None
    for md in coordinator.list_transactions(producer_ids=frozenset({producer_id})):
        if md.producer_id != producer_id:
            continue
        ongoing = md.state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
        listed = tp in md.topic_partitions
        deadline = md.txn_start_timestamp + md.txn_timeout_ms if md.state is TxnState.ONGOING and listed else None
        return TxnOwner(transactional_id=md.transactional_id, state=md.state.display_name,
                        timeout_ms=md.txn_timeout_ms, deadline_ms=deadline, lists_partition=listed and ongoing)
    return None


def _who(owner: TxnOwner | None) -> str:
    if owner is None:
        return "transactional id unknown to the coordinator"
    return f"transactional id '{owner.transactional_id}' ({owner.state})"


def _ending(owner: TxnOwner | None) -> str:
    if owner is None:
        return "no timeout will end it (the coordinator does not know this producer id)"
    if owner.deadline_ms is not None:
        return f"the coordinator times it out at {_wall(owner.deadline_ms)} (transaction.timeout.ms {owner.timeout_ms})"
    if not owner.lists_partition:
        return "no timeout will end it (the coordinator's transaction does not include this partition)"
    return "the coordinator is writing its markers"


class LsoMonitor:
    """The periodic, supervised check; bootstrap() gives the HOST:PORT for the abort command."""

    def __init__(
        self, logs: LogSource, threshold_ms: int, bootstrap: Callable[[], str],
        coordinator: Callable[[], TransactionCoordinator | None] = lambda: None, clock: Callable[[], int] | None = None,
    ) -> None:
        self.logs = logs
        self.watch = LsoWatch(threshold_ms)
        self.bootstrap = bootstrap
        self.coordinator = coordinator
        self._now = clock or wall_clock_ms
        self.interval_s = min(max(threshold_ms / 4, 50), 5000) / 1000
        self._tasks = TaskSupervisor("LSO monitor")

    async def start(self) -> None:
        self._tasks.spawn("LSO check", self._loop)

    async def stop(self) -> None:
        await self._tasks.stop()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            self.check_once()

    def check_once(self) -> None:
        now = self._now()
        due, cleared = self.watch.check(now, self.logs.open_transactions())
        for tp, txn in cleared:
            self._log_cleared(tp, txn, now)
        for tp, txn in due:
            self._log_held(tp, txn, now)

    def _log_held(self, tp: TopicPartition, txn: OpenTransaction, now: int) -> None:
        plog = self.logs.find_log(tp)
        if plog is None:
            return
        hw, lso = plog.high_watermark, plog.last_stable_offset
        owner = owner_of(self.coordinator(), txn.producer_id, tp)
        log.warning(
            "last stable offset of %s held back %.1f s by one open transaction: LSO %d is %s behind "
            "the high watermark %d; %s, producer id %d epoch %d; started at offset %d at %s; %s; to abort it: "
            "kafka-transactions --bootstrap-server %s abort --topic %s --partition %d --start-offset %d",
            tp, (now - txn.start_timestamp) / 1000, lso, _offsets(hw - lso), hw, _who(owner), txn.producer_id,
            txn.producer_epoch, txn.first_offset, _wall(txn.start_timestamp), _ending(owner), self.bootstrap(),
            tp.topic, tp.partition, txn.first_offset)

    def _log_cleared(self, tp: TopicPartition, txn: OpenTransaction, now: int) -> None:
        plog = self.logs.find_log(tp)
        where = "" if plog is None else (f"; LSO {plog.last_stable_offset}, high watermark "
                                         f"{plog.high_watermark}")
        log.info("last stable offset of %s moves again: the transaction of producer id %d epoch %d that began "
                 "at offset %d is no longer open (it held the LSO back %.1f s)%s", tp, txn.producer_id,
                 txn.producer_epoch, txn.first_offset, (now - txn.start_timestamp) / 1000, where)
