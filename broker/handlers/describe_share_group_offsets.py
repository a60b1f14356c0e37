"""DescribeShareGroupOffsets v0-1 (KIP-932).

Behaviour: each group's share-partition start offsets, for the topics named or (topics null) for
every topic the group has state for; a partition with no state has start offset -1. A group with
neither members nor state is GROUP_ID_NOT_FOUND, one the caller may not DESCRIBE
GROUP_AUTHORIZATION_FAILED; an unknown topic's partitions are UNKNOWN_TOPIC_OR_PARTITION, a topic
the caller may not DESCRIBE TOPIC_AUTHORIZATION_FAILED.
Version notes: v1 (KIP-1226) adds each partition's lag: the records from the start offset to the
high watermark not yet acknowledged or archived (-1 where there is no state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.coordinator import ShareCoordinator
from coordinator.share.state_log import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied, require
from ..handler import Handler, RequestContext
from .share_common import share_coordinator

if TYPE_CHECKING:
    from protocol.request_types.describe_share_group_offsets import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsRequestGroup,
    )


def _partition(ctx: RequestContext, coordinator: ShareCoordinator, key: SharePartitionKey,
               name: str) -> dict[str, object]:
    tp = TopicPartition(name, key.partition)
    stored = coordinator.manager.stored_state(key)
    leader = ctx.broker.cluster.leader(tp)
    out: dict[str, object] = {"partition_index": key.partition, "start_offset": stored.start_offset if stored else -1,
           "leader_epoch": leader.leader_epoch if leader else -1, "error_code": ErrorCode.none, "error_message": None}
    if ctx.version >= 1:
        out["lag"] = coordinator.manager.lag(key, tp) if stored else -1
    return out


def _topic(ctx: RequestContext, coordinator: ShareCoordinator, group_id: str, name: str,
           partitions: list[int] | None) -> dict[str, object]:
    meta = ctx.broker.logs.topics.get(name)
    error: KafkaError | None = None
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        error = denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    elif meta is None:
        error = KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist")
    if error is not None:
        failed = {"partition_index": 0, "start_offset": -1, "leader_epoch": -1, "error_code": error.code,
                  "error_message": error.message} | ({"lag": -1} if ctx.version >= 1 else {})
        return {"topic_name": name, "topic_id": meta.topic_id if meta else None,
                "partitions": [failed | {"partition_index": p} for p in partitions or [0]]}
    assert meta is not None  # no error: the topic exists
    wanted = partitions if partitions is not None else sorted(
        k.partition for k in coordinator.group_keys(group_id) if k.topic_id == meta.topic_id)
    return {"topic_name": name, "topic_id": meta.topic_id,
            "partitions": [_partition(ctx, coordinator, SharePartitionKey(group_id, meta.topic_id, p), name)
                           for p in wanted]}


def _group(ctx: RequestContext, request_group: DescribeShareGroupOffsetsRequestGroup) -> dict[str, object]:
    group_id = request_group.group_id
    try:
        require(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)
        coordinator = share_coordinator(ctx)
        if coordinator.describe(group_id) is None:
            raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
    except KafkaError as exc:
        return {"group_id": group_id, "topics": [], "error_code": exc.code, "error_message": exc.message}
    if request_group.topics is None:
        names = {m.name for k in coordinator.group_keys(group_id)
                 if (m := ctx.broker.logs.topic_by_id(k.topic_id)) is not None}
        wanted: list[tuple[str, list[int] | None]] = [(n, None) for n in sorted(names)]
    else:
        wanted = [(t.topic_name, [int(p) for p in t.partitions]) for t in request_group.topics]
    return {"group_id": group_id, "error_code": ErrorCode.none, "error_message": None,
            "topics": [_topic(ctx, coordinator, group_id, name, parts) for name, parts in wanted]}


async def handle(ctx: RequestContext, request: DescribeShareGroupOffsetsRequest) -> object:
    return ctx.respond({"throttle_time": 0, "groups": [_group(ctx, g) for g in request.groups]})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, min_version=0, max_version=1, handle=handle)
