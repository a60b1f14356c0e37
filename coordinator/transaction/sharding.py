"""The transaction coordinator's shards: the __transaction_state partitions this broker leads.

Leading a partition makes this broker the coordinator of the transactional ids hashed to it, with
the leader epoch as coordinator epoch (docs/cluster.md). on_elected replays the partition in the
background and installs its ids inside the actor, then resumes the markers of every transaction
found in PrepareCommit / PrepareAbort (the previous coordinator died or lost the shard before
writing them); timeouts resume with the ids, since the timed-out scan covers every loaded id.
on_resigned drops the ids at once and cancels their marker writes: the next coordinator redoes
them, and markers written twice change nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from storage.api import TopicPartition

from ..shards import CoordinatorShards
from ..tasks import TaskSupervisor
from .log import TRANSACTION_STATE_TOPIC
from .metadata import TransactionMetadata
from .state_store import TransactionStateStore

__all__ = ("TxnShards",)

log = logging.getLogger(__name__)
R = TypeVar("R")


class TxnShards:
    """TransactionCoordinator's LeadershipListener side; the actor supplies what is declared here."""

    shards: CoordinatorShards
    store: TransactionStateStore
    transactions: dict[str, TransactionMetadata]
    _tasks: TaskSupervisor
    _marker_tasks: dict[str, asyncio.Task[Any]]

    def partition_for(self, transactional_id: str) -> int:
        raise NotImplementedError

    async def _call(self, fn: Callable[[], Coroutine[Any, Any, R]]) -> R:
        raise NotImplementedError

    def _send_markers(self, md: TransactionMetadata) -> None:
        raise NotImplementedError

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        """Become the coordinator of tp's ids: load the shard in the background (its ids answer
        COORDINATOR_LOAD_IN_PROGRESS meanwhile) so the caller is not held up."""
        if tp.topic == TRANSACTION_STATE_TOPIC and self.shards.elect(tp.partition, leader_epoch):
            self.shards.track_load(tp.partition, self._tasks.spawn(
                f"loading {tp}", lambda: self._load(tp.partition, leader_epoch)))

    async def on_resigned(self, tp: TopicPartition) -> None:
        """Stop coordinating tp's ids at once (no queue: a new leader may already serve them)."""
        if tp.topic != TRANSACTION_STATE_TOPIC or not self.shards.resign(tp.partition):
            return
        gone = [i for i in self.transactions if self.partition_for(i) == tp.partition]
        for transactional_id in gone:
            del self.transactions[transactional_id]
            task = self._marker_tasks.pop(transactional_id, None)
            if task is not None:
                task.cancel()
        log.info("no longer the coordinator of %s: unloaded %d transactional ids", tp, len(gone))

    async def _load(self, partition: int, epoch: int) -> None:
        if not self.shards.is_current(partition, epoch):
            return  # resigned (or elected again) before the load began
        loaded = await self.store.load_partition(partition)
        await self._call(lambda: self._install(partition, epoch, loaded))

    async def _install(self, partition: int, epoch: int, loaded: dict[str, TransactionMetadata]) -> None:
        if not self.shards.finish_loading(partition, epoch):
            return
        for transactional_id in [i for i in self.transactions if self.partition_for(i) == partition]:
            del self.transactions[transactional_id]  # stale entries of an earlier term
        self.transactions.update(loaded)
        for md in loaded.values():
            if md.state.is_preparing:  # the last coordinator stopped while markers were being written
                log.info("resuming %s of '%s' (coordinator epoch %d)", md.state.display_name,
                         md.transactional_id, epoch)
                self._send_markers(md)

