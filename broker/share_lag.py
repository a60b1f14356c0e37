"""The high watermarks a share group's lag is reckoned from (DescribeShareGroupOffsets v1, KIP-1226),
and the log start offsets an altered start offset is kept above (AlterShareGroupOffsets in cluster
mode): the logs this broker leads are read directly, the others asked of their leaders with
ListOffsets (LATEST, EARLIEST), as Kafka 4.4's group coordinator asks them, one request per
leader. A partition whose leader is unknown or does not answer is left out (its lag is unknown:
-1; its start offset is not clamped)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.list_offsets.v9 import request as list_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

if TYPE_CHECKING:
    from .state import BrokerState

__all__ = ("high_watermarks", "log_start_offsets")

log = logging.getLogger(__name__)
_LATEST, _EARLIEST = -1, -2


async def high_watermarks(broker: BrokerState, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    return await _offsets(broker, tps, _LATEST)


async def log_start_offsets(broker: BrokerState, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    return await _offsets(broker, tps, _EARLIEST)


async def _offsets(broker: BrokerState, tps: Iterable[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    remote: dict[int, list[TopicPartition]] = {}
    cluster = broker.cluster
    for tp in tps:
        leader = cluster.leader(tp)
        plog = broker.logs.find_log(tp)
        if cluster.leads_everything or (leader is not None and leader.leader == cluster.node_id):
            if plog is not None:
                out[tp] = plog.high_watermark if timestamp == _LATEST else plog.log_start_offset
        elif leader is not None and broker.inter_broker is not None:
            remote.setdefault(leader.leader, []).append(tp)
    for got in await asyncio.gather(*(_ask(broker, node, same, timestamp) for node, same in remote.items())):
        out.update(got)
    return out


async def _ask(broker: BrokerState, node: int, tps: list[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    request = list_req.ListOffsetsRequest(replica_id=BrokerId(-1), isolation_level=i8(0), topics=tuple(
        list_req.ListOffsetsTopic(name=TopicName(name), partitions=tuple(
            list_req.ListOffsetsPartition(partition_index=i32(p), timestamp=i64(timestamp)) for p in parts))
        for name, parts in by_topic.items()))
    assert broker.inter_broker is not None  # only asked with one
    try:
        response = await broker.inter_broker.send(node, request)
    except KafkaError as exc:
        log.info("offsets (timestamp %d) from broker %d for a share group: %s", timestamp, node, exc)
        return {}
    return {TopicPartition(t.name, p.partition_index): int(p.offset) for t in response.topics for p in t.partitions
            if p.error_code == ErrorCode.none}
