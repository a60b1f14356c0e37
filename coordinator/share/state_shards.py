"""The share coordinator of cluster mode (Kafka's ShareCoordinator): the __share_group_state
partitions this broker leads, each the shard of the share-partition keys hashed to it.

Leading a partition makes this broker the keeper of its keys' states, as the transaction and group
coordinators are of theirs (coordinator/shards.py): on election the partition is replayed in the
background (its keys answer COORDINATOR_LOAD_IN_PROGRESS meanwhile), on resignation dropped at
once (NOT_COORDINATOR: the share-partition leaders ask the new leader, which replays the same
records). A write is appended to the partition before it is answered, so a share-partition leader
that got its answer never loses the state, whichever broker dies. The share-partition leaders call
read and write here directly, or through ReadShareGroupState / WriteShareGroupState from other
brokers (broker/share_state_client.py).
"""

from __future__ import annotations

import logging

from storage.api import LogSource, TopicPartition

from ..shards import CoordinatorShards
from ..tasks import TaskSupervisor
from .state_log import SHARE_GROUP_STATE_TOPIC, SharePartitionKey, ShareStateLog, StoredShareState

__all__ = ("ShareStateShards",)

log = logging.getLogger(__name__)


class ShareStateShards:
    def __init__(self, logs: LogSource, num_partitions: int) -> None:
        self.log = ShareStateLog(logs, num_partitions)
        self.shards = CoordinatorShards(SHARE_GROUP_STATE_TOPIC, "share-partition")
        self._states: dict[int, dict[SharePartitionKey, StoredShareState]] = {}
        self._loads = TaskSupervisor("share coordinator")

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        if tp.topic == SHARE_GROUP_STATE_TOPIC and self.shards.elect(tp.partition, leader_epoch):
            self.shards.track_load(tp.partition, self._loads.spawn(
                f"loading {tp}", lambda: self._load(tp.partition, leader_epoch)))

    async def on_resigned(self, tp: TopicPartition) -> None:
        if tp.topic == SHARE_GROUP_STATE_TOPIC and self.shards.resign(tp.partition):
            gone = self._states.pop(tp.partition, {})
            log.info("no longer the share coordinator of %s: unloaded %d share-partitions", tp, len(gone))

    async def _load(self, partition: int, epoch: int) -> None:
        if not self.shards.is_current(partition, epoch):
            return
        states = await self.log.load_partition(partition)
        if self.shards.finish_loading(partition, epoch):
            self._states[partition] = states
            log.info("share coordinator of %s-%d: loaded %d share-partitions (coordinator epoch %d)",
                     SHARE_GROUP_STATE_TOPIC, partition, len(states), epoch)

    def read(self, key: SharePartitionKey) -> StoredShareState | None:
        """The key's state (KafkaError NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS if its shard
        is not loaded here)."""
        partition = self.log.partition_of(key)
        self.shards.check(partition, str(key))
        return self._states[partition].get(key)

    async def write(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        partition = self.log.partition_of(key)
        epoch = self.shards.check(partition, str(key))
        await self.log.write(key, state)
        if self.shards.is_current(partition, epoch):
            states = self._states[partition]
            if state is None:
                states.pop(key, None)
            else:
                states[key] = state
