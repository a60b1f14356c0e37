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

A key has a state once its group coordinator initialized it (InitializeShareGroupState, when the
share-partition is first assigned or its offsets are altered); reading or writing a key before
that is INVALID_REQUEST with Kafka's messages, as Kafka's ShareCoordinatorShard refuses it. Each
key's state records the highest leader epoch of the share-partition leaders that read or wrote it,
as Kafka's ShareSnapshot value does: a read or write with an older leader epoch (a paused old
leader) is refused with FENCED_LEADER_EPOCH, so it cannot overwrite the newer leader's state; a
read with a newer one is recorded (written) before it is answered. Writes of one key are
serialized, so a write checked against the recorded epoch is also the next one appended.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from protocol.errors import ErrorCode, KafkaError
from storage.api import LogSource, TopicPartition

from ..shards import CoordinatorShards
from ..tasks import TaskSupervisor
from .state_log import (
    READ_UNINITIALIZED,
    SHARE_GROUP_STATE_TOPIC,
    WRITE_UNINITIALIZED,
    SharePartitionKey,
    ShareStateLog,
    StoredShareState,
    uninitialized,
)

__all__ = ("ShareStateShards", "check_leader_epoch", "check_state_epoch")

log = logging.getLogger(__name__)


def check_leader_epoch(key: SharePartitionKey, recorded: int | None, leader_epoch: int) -> None:
    """FENCED_LEADER_EPOCH for a leader epoch below the one recorded for the key, if any (Kafka's
    ShareCoordinatorShard: recorded > requested)."""
    if recorded is not None and recorded > leader_epoch:
        raise KafkaError(ErrorCode.fenced_leader_epoch,
                         f"The leader epoch {leader_epoch} of share-partition {key} is smaller than the last "
                         f"recorded {recorded}.")


def check_state_epoch(key: SharePartitionKey, stored: StoredShareState | None, state_epoch: int) -> None:
    """FENCED_STATE_EPOCH for a state epoch below the key's (Kafka's ShareCoordinatorShard: a write
    or initialization with recorded > requested; equal is allowed)."""
    if stored is not None and stored.state_epoch > state_epoch:
        log.info("share-partition %s: state epoch %d is smaller than the last recorded %d", key, state_epoch,
                 stored.state_epoch)
        raise KafkaError(ErrorCode.fenced_state_epoch,  # Kafka's message (Errors.FENCED_STATE_EPOCH)
                         "The coordinator rejected the request because the state epoch did not match.")


class ShareStateShards:
    def __init__(self, logs: LogSource, num_partitions: int) -> None:
        self.log = ShareStateLog(logs, num_partitions)
        self.shards = CoordinatorShards(SHARE_GROUP_STATE_TOPIC, "share-partition")
        self._states: dict[int, dict[SharePartitionKey, StoredShareState]] = {}
        self._loads = TaskSupervisor("share coordinator")
        self._writing: dict[SharePartitionKey, asyncio.Lock] = {}

    async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
        if tp.topic == SHARE_GROUP_STATE_TOPIC and self.shards.elect(tp.partition, leader_epoch):
            self.shards.track_load(tp.partition, self._loads.spawn(
                f"loading {tp}", lambda: self._load(tp.partition, leader_epoch)))

    async def on_resigned(self, tp: TopicPartition) -> None:
        if tp.topic == SHARE_GROUP_STATE_TOPIC and self.shards.resign(tp.partition):
            gone = self._states.pop(tp.partition, {})
            for key in gone:
                self._writing.pop(key, None)
            log.info("no longer the share coordinator of %s: unloaded %d share-partitions", tp, len(gone))

    async def _load(self, partition: int, epoch: int) -> None:
        if not self.shards.is_current(partition, epoch):
            return
        states = await self.log.load_partition(partition)
        if self.shards.finish_loading(partition, epoch):
            self._states[partition] = states
            log.info("share coordinator of %s-%d: loaded %d share-partitions (coordinator epoch %d)",
                     SHARE_GROUP_STATE_TOPIC, partition, len(states), epoch)

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> StoredShareState:
        """The key's state (KafkaError NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS if its shard
        is not loaded here, INVALID_REQUEST if it was never initialized, FENCED_LEADER_EPOCH for an
        older leader); a newer leader epoch is written first."""
        async with self._writing.setdefault(key, asyncio.Lock()):
            stored = self._stored(key)
            if stored is None:
                raise uninitialized(READ_UNINITIALIZED)
            check_leader_epoch(key, stored.leader_epoch, leader_epoch)
            if leader_epoch > stored.leader_epoch:
                log.info("share-partition %s: read with new leader epoch %d", key, leader_epoch)
                stored = dataclasses.replace(stored, leader_epoch=leader_epoch)
                await self._append(key, stored)
            return stored

    async def write(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        """Append the key's state (None deletes it); INVALID_REQUEST if it was never initialized,
        FENCED_LEADER_EPOCH for an older leader."""
        async with self._writing.setdefault(key, asyncio.Lock()):
            if state is not None:
                stored = self._stored(key)
                if stored is None:
                    raise uninitialized(WRITE_UNINITIALIZED)
                check_leader_epoch(key, stored.leader_epoch, state.leader_epoch)
                check_state_epoch(key, stored, state.state_epoch)
            await self._append(key, state)

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState: the key starts (again) at start_offset with no record
        states, at state_epoch (FENCED_STATE_EPOCH below the recorded one), so a share-partition
        leader's later writes at an older epoch are fenced and it reads again. The group
        coordinator initializes a share-partition first assigned with start offset -1 (its leader
        then starts where share.auto.offset.reset says), and altered offsets with theirs."""
        async with self._writing.setdefault(key, asyncio.Lock()):
            stored = self._stored(key)
            check_state_epoch(key, stored, state_epoch)
            leader_epoch = stored.leader_epoch if stored is not None else 0  # none yet: 0, as Kafka's summary shows
            await self._append(key, StoredShareState(state_epoch, start_offset, (), leader_epoch))

    def summary(self, key: SharePartitionKey) -> StoredShareState | None:
        """ReadShareGroupStateSummary: the key's state, with no leader epoch check or update."""
        return self._stored(key)

    def _stored(self, key: SharePartitionKey) -> StoredShareState | None:
        partition = self.log.partition_of(key)
        self.shards.check(partition, str(key))
        return self._states[partition].get(key)

    async def _append(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        partition = self.log.partition_of(key)
        epoch = self.shards.check(partition, str(key))
        await self.log.write(key, state)
        if self.shards.is_current(partition, epoch):
            states = self._states[partition]
            if state is None:
                states.pop(key, None)
            else:
                states[key] = state
