"""DescribeShareGroupOffsets v0-1 (KIP-932).

Behaviour: each group's share-partition start offsets, for the topics named or (topics null) for
every topic the group has state for; a partition with no state has start offset -1. A group with
neither members nor state is GROUP_ID_NOT_FOUND, one the caller may not DESCRIBE
GROUP_AUTHORIZATION_FAILED; an unknown topic's partitions are UNKNOWN_TOPIC_OR_PARTITION, a topic
the caller may not DESCRIBE TOPIC_AUTHORIZATION_FAILED. In cluster mode the group coordinator
reads the start offsets from each share coordinator (ReadShareGroupStateSummary), whichever broker
leads the share-partitions; a partition whose share coordinator does not answer gets its error.
Version notes: v1 (KIP-1226) adds each partition's lag: the records from the start offset to the
high watermark not yet acknowledged or archived (-1 where there is no state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.admin import ShareStateSummary, Summary
from coordinator.share.state_log import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied, require
from ..handler import Handler, RequestContext
from ..share_lag import high_watermarks
from .share_common import share_coordinator

if TYPE_CHECKING:
    from protocol.request_types.describe_share_group_offsets import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsRequestGroup,
    )


def _partition(ctx: RequestContext, key: SharePartitionKey, name: str, got: Summary,
               ends: dict[TopicPartition, int]) -> dict[str, object]:
    tp = TopicPartition(name, key.partition)
    leader = ctx.broker.cluster.leader(tp)
    out: dict[str, object] = {"partition_index": key.partition, "start_offset": -1,
                              "leader_epoch": leader.leader_epoch if leader else -1,
                              "error_code": ErrorCode.none, "error_message": None}
    if ctx.version >= 1:
        out["lag"] = -1
    if isinstance(got, KafkaError):
        return out | {"error_code": got.code, "error_message": got.message}
    if got is not None:
        out["start_offset"] = got.start_offset
        if ctx.version >= 1:
            out["lag"] = _lag(ends.get(tp), got)
    return out


def _lag(end: int | None, got: ShareStateSummary) -> int:
    """The records from the start offset to the high watermark not yet delivered (-1: unknown, as
    for a share-partition initialized but not yet read, start offset -1: Kafka 4.4's
    shouldComputeSharePartitionLag)."""
    if end is None or got.delivery_complete_count < 0 or got.start_offset < 0:
        return -1
    return max(0, end - got.start_offset - got.delivery_complete_count)


def _failed_topic(ctx: RequestContext, name: str, partitions: list[int] | None, error: KafkaError) -> dict[str, object]:
    meta = ctx.broker.logs.topics.get(name)
    failed = {"partition_index": 0, "start_offset": -1, "leader_epoch": -1, "error_code": error.code,
              "error_message": error.message} | ({"lag": -1} if ctx.version >= 1 else {})
    return {"topic_name": name, "topic_id": meta.topic_id if meta else None,
            "partitions": [failed | {"partition_index": p} for p in partitions or [0]]}


def _topic_error(ctx: RequestContext, name: str) -> KafkaError | None:
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    if name not in ctx.broker.logs.topics:
        return KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist")
    return None


async def _group(ctx: RequestContext, request_group: DescribeShareGroupOffsetsRequestGroup) -> dict[str, object]:
    group_id = request_group.group_id
    try:
        require(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)
        coordinator = share_coordinator(ctx)
        if await coordinator.known(group_id) is None:
            raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        topics = _wanted(ctx, request_group)
        keys = None if topics is None else [
            SharePartitionKey(group_id, ctx.broker.logs.topics[name].topic_id, p)
            for name, parts in topics if _topic_error(ctx, name) is None for p in parts or ()]
        found = await coordinator.offsets(group_id, keys)
    except KafkaError as exc:
        return {"group_id": group_id, "topics": [], "error_code": exc.code, "error_message": exc.message}
    if topics is None:  # every topic the group has state for, the caller may describe
        by_name: dict[str, list[int]] = {}
        for key in sorted(found, key=lambda k: k.partition):
            if (meta := ctx.broker.logs.topic_by_id(key.topic_id)) is not None:
                by_name.setdefault(meta.name, []).append(key.partition)
        topics = [(name, by_name[name]) for name in sorted(by_name)]
    with_state = [TopicPartition(meta.name, k.partition) for k, got in found.items()
                  if isinstance(got, ShareStateSummary) and (meta := ctx.broker.logs.topic_by_id(k.topic_id))]
    ends = await high_watermarks(ctx.broker, with_state) if ctx.version >= 1 else {}
    out = []
    for name, parts in topics:
        error = _topic_error(ctx, name)
        if error is not None:
            out.append(_failed_topic(ctx, name, parts, error))
            continue
        topic_id = ctx.broker.logs.topics[name].topic_id
        out.append({"topic_name": name, "topic_id": topic_id, "partitions": [
            _partition(ctx, key, name, found.get(key), ends) for key in
            (SharePartitionKey(group_id, topic_id, p) for p in parts or ())]})
    return {"group_id": group_id, "error_code": ErrorCode.none, "error_message": None, "topics": out}


def _wanted(ctx: RequestContext, request_group: DescribeShareGroupOffsetsRequestGroup,
            ) -> list[tuple[str, list[int]]] | None:
    if request_group.topics is None:
        return None
    return [(t.topic_name, [int(p) for p in t.partitions]) for t in request_group.topics]


async def handle(ctx: RequestContext, request: DescribeShareGroupOffsetsRequest) -> object:
    return ctx.respond({"throttle_time": 0, "groups": [await _group(ctx, g) for g in request.groups]})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, min_version=0, max_version=1, handle=handle)
