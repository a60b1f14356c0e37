"""Which shards (partitions of an internal topic) a coordinator serves, Kafka's way.

A coordinator is sharded by its internal topic's partitions (__transaction_state for
transactions, __consumer_offsets for groups): leading a partition is being that shard's
coordinator, and the leader epoch is the coordinator epoch (docs/cluster.md). The storage layer
announces leadership through LeadershipListener.on_elected / on_resigned; the coordinator then
loads the shard (replays its partition) and unloads it. A key whose shard is not served here is
NOT_COORDINATOR (the client asks FindCoordinator again); one whose shard is still loading is
COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers both.

The table is pure: the coordinator's actor reads and changes it, never two tasks at once. An
election carries an epoch, and a load that finishes after its shard was resigned or elected
again (a newer epoch) is discarded: Kafka's loadingPartitions / ownedPartitions with epochs.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

from protocol.errors import ErrorCode, KafkaError
from storage.api import ClusterView, TopicPartition

__all__ = ("CoordinatorShards", "ShardStatus")


class ShardStatus(enum.Enum):
    LOADING = "loading"
    LOADED = "loaded"


@dataclass(slots=True)
class _Shard:
    epoch: int
    status: ShardStatus
    load: asyncio.Task[object] | None = field(default=None, repr=False)


class CoordinatorShards:
    def __init__(self, topic: str, what: str, view: ClusterView | None = None) -> None:
        self.topic = topic
        self.what = what  # "transactional id", "group": for error messages
        self._shards: dict[int, _Shard] = {}
        # Says which partitions this broker was just elected to but has not announced yet.
        self._view = view

    def elect(self, partition: int, epoch: int) -> bool:
        """This broker now leads the partition at epoch: load it. False for an election already
        known (the same or an older epoch), which needs no new load."""
        shard = self._shards.get(partition)
        if shard is not None and shard.epoch >= epoch:
            return False
        self._shards[partition] = _Shard(epoch, ShardStatus.LOADING)
        return True

    def finish_loading(self, partition: int, epoch: int) -> bool:
        """The load of (partition, epoch) is done; False if that election is no longer current,
        so its result must be thrown away."""
        shard = self._shards.get(partition)
        if shard is None or shard.epoch != epoch or shard.status is not ShardStatus.LOADING:
            return False
        shard.status = ShardStatus.LOADED
        return True

    def track_load(self, partition: int, task: asyncio.Task[object]) -> None:
        self._shards[partition].load = task

    async def wait_loaded(self, partition: int) -> None:
        """Until the shard's load in progress has ended (loaded, discarded or cancelled)."""
        shard = self._shards.get(partition)
        if shard is not None and shard.load is not None:
            await asyncio.wait([shard.load])

    def resign(self, partition: int) -> bool:
        """Stop serving the partition; whether it was served (loaded or loading)."""
        return self._shards.pop(partition, None) is not None

    def is_current(self, partition: int, epoch: int) -> bool:
        shard = self._shards.get(partition)
        return shard is not None and shard.epoch == epoch

    def epoch(self, partition: int) -> int:
        """The coordinator epoch of a shard served here (check() it first)."""
        return self._shards[partition].epoch

    def status(self, partition: int) -> ShardStatus | None:
        shard = self._shards.get(partition)
        return None if shard is None else shard.status

    def check(self, partition: int, key: str) -> int:
        """The shard's coordinator epoch if it is loaded here; else the error Kafka answers."""
        shard = self._shards.get(partition)
        if shard is None and self._view is not None and self._view.electing(TopicPartition(self.topic, partition)):
            # Elected, its log still opening: the other brokers already send its clients here, and
            # NOT_COORDINATOR would end a librdkafka committed() (it retries only this error).
            raise KafkaError(ErrorCode.coordinator_load_in_progress,
                             f"the coordinator of {self.what} '{key}' is opening {self.topic}-{partition}")
        if shard is None:
            raise KafkaError(ErrorCode.not_coordinator,
                             f"this broker is not the coordinator of {self.what} '{key}' "
                             f"({self.topic}-{partition})")
        if shard.status is ShardStatus.LOADING:
            raise KafkaError(ErrorCode.coordinator_load_in_progress,
                             f"the coordinator of {self.what} '{key}' is loading {self.topic}-{partition}")
        return shard.epoch

    def loaded(self) -> Iterator[int]:
        return (p for p, s in self._shards.items() if s.status is ShardStatus.LOADED)

    def __contains__(self, partition: object) -> bool:
        shard = self._shards.get(partition) if isinstance(partition, int) else None
        return shard is not None and shard.status is ShardStatus.LOADED
