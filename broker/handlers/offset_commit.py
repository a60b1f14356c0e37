"""OffsetCommit v2-9.

Behaviour: the offsets are appended to the group's __consumer_offsets partition before the
answer, so an acknowledged commit survives a crash. A group without members accepts commits with
generation -1 and an empty member id (assign() consumers); once it has members only the current
generation's members may commit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID;
REBALANCE_IN_PROGRESS between JoinGroup and SyncGroup). Unknown partitions get
UNKNOWN_TOPIC_OR_PARTITION, metadata over offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE.
Version notes: v2-4 carry retention_time_ms (-1: the broker's offsets.retention.minutes); v6+
committed_leader_epoch; v7+ group_instance_id.
"""

from __future__ import annotations

from typing import Any

from coordinator.group.offsets import OffsetAndMetadata
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..handler import Handler, RequestContext
from .group_common import by_topic, group_coordinator, ms


def _known(ctx: RequestContext, tp: TopicPartition) -> bool:
    meta = ctx.broker.logs.topics.get(tp.topic)
    return meta is not None and 0 <= tp.partition < meta.partitions


def _offsets(request: Any) -> dict[TopicPartition, OffsetAndMetadata]:
    return {
        TopicPartition(t.name, p.partition_index): OffsetAndMetadata(
            committed_offset=p.committed_offset,
            committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata or "",
        )
        for t in request.topics
        for p in t.partitions
    }


async def handle(ctx: RequestContext, request: Any) -> Any:
    offsets = _offsets(request)
    results = {tp: ErrorCode.unknown_topic_or_partition for tp in offsets if not _known(ctx, tp)}
    wanted = {tp: v for tp, v in offsets.items() if tp not in results}
    retention = getattr(request, "retention_time", None)
    if wanted:
        try:
            results |= await group_coordinator(ctx).commit_offsets(
                request.group_id,
                wanted,
                member_id=request.member_id,
                generation_id=request.generation_id_or_member_epoch,
                group_instance_id=getattr(request, "group_instance_id", None),
                retention_ms=None if retention is None else ms(retention),
            )
        except KafkaError as exc:
            results |= dict.fromkeys(wanted, exc.code)
    ordered = {tp: results[tp] for tp in offsets}
    topics = by_topic(ordered, lambda p, code: {"partition_index": p, "error_code": code})
    return ctx.respond({"throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.OFFSET_COMMIT, min_version=2, max_version=9, handle=handle)
