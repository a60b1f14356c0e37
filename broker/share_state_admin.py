"""Cluster mode's ShareStateAdmin (coordinator/share/admin.py): a group coordinator initializes,
summarizes and deletes share-partition states at the share coordinator of each key, as Kafka's
DefaultStatePersister does: directly for the keys whose __share_group_state partition this broker
leads, else one InitializeShareGroupState v0 / ReadShareGroupStateSummary v1 /
DeleteShareGroupState v0 request per share coordinator broker. Keys whose shard has no leader, is
loading or moves are asked again, as RemoteShareState asks (broker/share_state_client.py), until
its patience runs out; then each answers its own error.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from kio.schema.delete_share_group_state.v0 import request as delete_req
from kio.schema.initialize_share_group_state.v0 import request as init_req
from kio.schema.read_share_group_state_summary.v1 import request as summary_req
from kio.static.primitive import i32, i64

from coordinator.share.admin import ShareStateSummary, Summary
from coordinator.share.state_log import SHARE_GROUP_STATE_TOPIC, SharePartitionKey
from coordinator.share.state_shards import ShareStateShards
from protocol.errors import ErrorCode, KafkaError
from storage.api import ClusterView, TopicPartition

from .inter_broker import InterBrokerClient
from .share_state_client import BACKOFF_S, MIN_PATIENCE_S, RETRIABLE

if TYPE_CHECKING:
    from kio.schema.read_share_group_state_summary.v1 import response as summary_resp

__all__ = ("ShareStateAdminClient",)

T = TypeVar("T")
Outcomes = dict[SharePartitionKey, "T | KafkaError"]


class ShareStateAdminClient:
    def __init__(self, cluster: ClusterView, client: InterBrokerClient, shards: ShareStateShards) -> None:
        self._cluster = cluster
        self._client = client
        self._shards = shards

    async def summaries(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, Summary]:
        async def local(key: SharePartitionKey) -> ShareStateSummary | None:
            stored = self._shards.summary(key)
            return ShareStateSummary.of(stored) if stored is not None else None
        return await self._batched(keys, local, self._remote_summaries)

    async def initialize(self, states: Mapping[SharePartitionKey, tuple[int, int]],
                         ) -> dict[SharePartitionKey, KafkaError | None]:
        async def local(key: SharePartitionKey) -> None:
            await self._shards.initialize(key, *states[key])

        async def remote(node: int, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, None | KafkaError]:
            request = init_req.InitializeShareGroupStateRequest(group_id=keys[0].group_id, topics=tuple(
                init_req.InitializeStateData(topic_id=topic_id, partitions=tuple(init_req.PartitionData(
                    partition=i32(k.partition), state_epoch=i32(states[k][0]), start_offset=i64(states[k][1]))
                    for k in same)) for topic_id, same in _by_topic(keys).items()))
            return _outcomes(keys[0].group_id, await self._client.send(node, request), lambda _: None)
        return await self._batched(list(states), local, remote)

    async def delete(self, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, KafkaError | None]:
        async def local(key: SharePartitionKey) -> None:
            await self._shards.write(key, None)

        async def remote(node: int, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, None | KafkaError]:
            request = delete_req.DeleteShareGroupStateRequest(group_id=keys[0].group_id, topics=tuple(
                delete_req.DeleteStateData(topic_id=topic_id, partitions=tuple(
                    delete_req.PartitionData(partition=i32(k.partition)) for k in same))
                for topic_id, same in _by_topic(keys).items()))
            return _outcomes(keys[0].group_id, await self._client.send(node, request), lambda _: None)
        return await self._batched(keys, local, remote)

    async def _remote_summaries(self, node: int, keys: Sequence[SharePartitionKey]) -> dict[SharePartitionKey, Summary]:
        request = summary_req.ReadShareGroupStateSummaryRequest(group_id=keys[0].group_id, topics=tuple(
            summary_req.ReadStateSummaryData(topic_id=topic_id, partitions=tuple(
                summary_req.PartitionData(partition=i32(k.partition), leader_epoch=i32(-1)) for k in same))
            for topic_id, same in _by_topic(keys).items()))
        response: summary_resp.ReadShareGroupStateSummaryResponse = await self._client.send(node, request)
        return _outcomes(keys[0].group_id, response, _summary)

    async def _batched(self, keys: Sequence[SharePartitionKey], local: Callable[[SharePartitionKey], Awaitable[T]],
                       remote: Callable[[int, Sequence[SharePartitionKey]], Awaitable[Outcomes[T]]]) -> Outcomes[T]:
        """Each key's outcome at its share coordinator; retriable failures asked again in time."""
        if not keys:
            return {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(2 * self._client.timeout_s, MIN_PATIENCE_S)
        await self._shards.log.ensure_topic()  # made at the first use, as Kafka makes it
        out: Outcomes[T] = {}
        pending = list(keys)
        while True:
            by_node: dict[int | None, list[SharePartitionKey]] = {}
            for key in pending:
                shard = TopicPartition(SHARE_GROUP_STATE_TOPIC, self._shards.log.partition_of(key))
                leader = self._cluster.leader(shard)
                by_node.setdefault(leader.leader if leader is not None else None, []).append(key)
            for got in await asyncio.gather(*(self._at(node, same, local, remote) for node, same in by_node.items())):
                out.update(got)
            pending = [k for k, v in out.items() if isinstance(v, KafkaError) and v.code in RETRIABLE]
            if not pending or loop.time() >= deadline:
                return out
            await asyncio.sleep(BACKOFF_S)

    async def _at(self, node: int | None, keys: Sequence[SharePartitionKey],
                  local: Callable[[SharePartitionKey], Awaitable[T]],
                  remote: Callable[[int, Sequence[SharePartitionKey]], Awaitable[Outcomes[T]]]) -> Outcomes[T]:
        try:
            if node is None:
                raise KafkaError(ErrorCode.coordinator_not_available, "no broker leads the share coordinator's shard")
            if node != self._cluster.node_id:
                return await remote(node, keys)
        except KafkaError as exc:
            return dict.fromkeys(keys, exc)
        out: Outcomes[T] = {}
        for key in keys:
            try:
                out[key] = await local(key)
            except KafkaError as exc:
                out[key] = exc
        return out


def _by_topic(keys: Sequence[SharePartitionKey]) -> dict[uuid.UUID, list[SharePartitionKey]]:
    out: dict[uuid.UUID, list[SharePartitionKey]] = {}
    for key in keys:
        out.setdefault(key.topic_id, []).append(key)
    return out


def _outcomes(group_id: str, response: object, value: Callable[[object], T]) -> Outcomes[T]:
    """Per key of a response's results (topic id, partitions with error code and message)."""
    out: Outcomes[T] = {}
    for topic in response.results:  # type: ignore[attr-defined]
        for p in topic.partitions:
            key = SharePartitionKey(group_id, topic.topic_id, int(p.partition))
            out[key] = value(p) if p.error_code == ErrorCode.none else KafkaError(
                ErrorCode(p.error_code), p.error_message or ErrorCode(p.error_code).name)
    return out


def _summary(p: object) -> ShareStateSummary | None:
    result: summary_resp.PartitionResult = p  # type: ignore[assignment]
    # a key with no state answers start offset -1 and DeliveryCompleteCount -1; one initialized
    # with no start offset yet (its leader has not read it) start offset -1 and a count of 0
    if result.start_offset < 0 and result.delivery_complete_count < 0:
        return None
    return ShareStateSummary(result.state_epoch, result.leader_epoch, result.start_offset,
                             result.delivery_complete_count)
