"""Cluster mode's ShareStateStore (coordinator/share/state_log.py): a share-partition leader reads
and writes its states at the share coordinator of each key, the leader of the key's
__share_group_state partition, as Kafka's DefaultStatePersister does: directly when that is this
broker, else with ReadShareGroupState v0 / WriteShareGroupState v0 (one key per request). While
the shard has no leader, is loading or moves (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a
broker that does not answer; the topic just made by the first use) the call is tried again for
up to twice request.timeout.ms, and at least 15 s: long enough for a dead share coordinator's
lease to lapse and the next to load.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeVar

from kio.schema.read_share_group_state.v0 import request as read_req
from kio.schema.write_share_group_state.v0 import request as write_req
from kio.static.primitive import i8, i16, i32, i64

from coordinator.share.partition_state import RecordState, StateBatch
from coordinator.share.state_log import SHARE_GROUP_STATE_TOPIC, SharePartitionKey, StoredShareState
from coordinator.share.state_shards import ShareStateShards
from protocol.errors import ErrorCode, KafkaError
from storage.api import ClusterView, TopicPartition

from .inter_broker import InterBrokerClient

if TYPE_CHECKING:
    from kio.schema.read_share_group_state.v0 import response as read_resp
    from kio.schema.write_share_group_state.v0 import response as write_resp

__all__ = ("BACKOFF_S", "MIN_PATIENCE_S", "RETRIABLE", "RemoteShareState")

T = TypeVar("T")
RETRIABLE: Final = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress,
                               ErrorCode.coordinator_not_available, ErrorCode.network_exception,
                               ErrorCode.request_timed_out, ErrorCode.leader_not_available})
BACKOFF_S: Final = 0.1
MIN_PATIENCE_S: Final = 15.0


class RemoteShareState:
    def __init__(self, cluster: ClusterView, client: InterBrokerClient, shards: ShareStateShards) -> None:
        self._cluster = cluster
        self._client = client
        self._shards = shards

    async def load(self) -> dict[SharePartitionKey, StoredShareState]:
        return {}

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> StoredShareState:
        return await self._call(key, lambda: self._shards.read(key, leader_epoch),
                                lambda node: self._read_remote(node, key, leader_epoch))

    async def write(self, key: SharePartitionKey, state: StoredShareState | None) -> None:
        if state is None:
            raise KafkaError(ErrorCode.unsupported_version,
                             "Deleting share group state is not served in cluster mode yet.")
        await self._call(key, lambda: self._shards.write(key, state), lambda node: self._write_remote(node, key, state))

    async def _call(self, key: SharePartitionKey, local: Callable[[], Awaitable[T]],
                    remote: Callable[[int], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(2 * self._client.timeout_s, MIN_PATIENCE_S)
        await self._shards.log.ensure_topic()  # made at the first use, as Kafka makes it
        while True:
            tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, self._shards.log.partition_of(key))
            leader = self._cluster.leader(tp)
            try:
                if leader is None:
                    raise KafkaError(ErrorCode.coordinator_not_available, f"no broker leads {tp}")
                return await (local() if leader.leader == self._cluster.node_id else remote(leader.leader))
            except KafkaError as exc:
                if exc.code not in RETRIABLE or loop.time() >= deadline:
                    raise
            await asyncio.sleep(BACKOFF_S)

    async def _read_remote(self, node: int, key: SharePartitionKey, leader_epoch: int) -> StoredShareState:
        request = read_req.ReadShareGroupStateRequest(group_id=key.group_id, topics=(read_req.ReadStateData(
            topic_id=key.topic_id, partitions=(read_req.PartitionData(partition=i32(key.partition),
                                                                      leader_epoch=i32(leader_epoch)),)),))
        response: read_resp.ReadShareGroupStateResponse = await self._client.send(node, request)
        [result] = [p for topic in response.results for p in topic.partitions]
        _raise(result)
        return StoredShareState(result.state_epoch, result.start_offset, tuple(
            StateBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
            for b in result.state_batches), leader_epoch)

    async def _write_remote(self, node: int, key: SharePartitionKey, state: StoredShareState) -> None:
        batches = tuple(write_req.StateBatch(first_offset=i64(b.first_offset), last_offset=i64(b.last_offset),
                                             delivery_state=i8(int(b.state)), delivery_count=i16(b.delivery_count))
                        for b in state.batches)
        partition = write_req.PartitionData(partition=i32(key.partition), state_epoch=i32(state.state_epoch),
                                            leader_epoch=i32(state.leader_epoch),
                                            start_offset=i64(state.start_offset),
                                            state_batches=batches)
        request = write_req.WriteShareGroupStateRequest(group_id=key.group_id, topics=(write_req.WriteStateData(
            topic_id=key.topic_id, partitions=(partition,)),))
        response: write_resp.WriteShareGroupStateResponse = await self._client.send(node, request)
        [result] = [p for topic in response.results for p in topic.partitions]
        _raise(result)


def _raise(result: read_resp.PartitionResult | write_resp.PartitionResult) -> None:
    if result.error_code != ErrorCode.none:
        raise KafkaError(ErrorCode(result.error_code), result.error_message or ErrorCode(result.error_code).name)
