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

from storage.api import TopicPartition

from ..runtime import CoordinatorRuntime
from ..shards import CoordinatorShards
from .log import TRANSACTION_STATE_TOPIC, TxnLogEntry
from .marker_writer import TxnMarker
from .messages import InstallShard, TxnEffect, TxnMessage
from .shard import TxnShard, markers_of
from .state_store import TransactionStateStore

__all__ = ("TxnShards",)

log = logging.getLogger(__name__)


class TxnShards:
    """TransactionCoordinator's LeadershipListener side; the actor supplies what is declared here."""

    shards: CoordinatorShards
    store: TransactionStateStore
    txn_shards: dict[int, TxnShard]
    runtime: CoordinatorRuntime[TxnMessage, TxnLogEntry, TxnEffect]
    _marker_tasks: dict[str, asyncio.Task[None]]

    def _send_markers(self, marker: TxnMarker) -> None:
        raise NotImplementedError

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        """Become the coordinator of tp's ids: load the shard in the background (its ids answer
        COORDINATOR_LOAD_IN_PROGRESS meanwhile) so the caller is not held up."""
        if tp.topic == TRANSACTION_STATE_TOPIC and self.shards.elect(tp.partition, leader_epoch):
            self.shards.track_load(tp.partition, self.runtime.tasks.spawn(
                f"loading {tp}", lambda: self._load(tp.partition, leader_epoch)))

    async def on_resigned(self, tp: TopicPartition) -> None:
        """Stop coordinating tp's ids at once (no queue: a new leader may already serve them)."""
        if tp.topic != TRANSACTION_STATE_TOPIC or not self.shards.resign(tp.partition):
            return
        shard = self.txn_shards.pop(tp.partition, None)
        gone = [] if shard is None else list(shard.transactions)
        for transactional_id in gone:
            task = self._marker_tasks.pop(transactional_id, None)
            if task is not None:
                task.cancel()
        log.info("no longer the coordinator of %s: unloaded %d transactional ids", tp, len(gone))

    async def _load(self, partition: int, epoch: int) -> None:
        if not self.shards.is_current(partition, epoch):
            return  # resigned (or elected again) before the load began
        shard = TxnShard(partition)
        records = await self.store.load_partition(partition, shard.replay)
        log.log(logging.INFO if records else logging.DEBUG, "loaded %d transactional ids from %d records of %s-%d",
                len(shard.transactions), records, TRANSACTION_STATE_TOPIC, partition)
        await self.runtime.call(InstallShard(partition=partition, epoch=epoch, shard=shard))

    def _install(self, partition: int, epoch: int, shard: TxnShard) -> None:
        if not self.shards.finish_loading(partition, epoch):
            return
        self.txn_shards[partition] = shard  # replaces the ids of an earlier term, if any
        for md in shard.transactions.values():
            if md.state.is_preparing:  # the last coordinator stopped while markers were being written
                log.info("resuming %s of '%s' (coordinator epoch %d)", md.state.display_name,
                         md.transactional_id, epoch)
                self._send_markers(markers_of(md.transactional_id, md.current))
