"""Helpers shared by the consumer-group handlers (not a handler: it has no HANDLER)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.offsets import OffsetAndMetadata
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import unauthorized
from ..handler import RequestContext

__all__ = (
    "by_topic", "client_host", "commit_results", "group_coordinator", "member_identity", "ms",
    "requested_offsets",
)

T = TypeVar("T")


def group_coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator = ctx.broker.group_coordinator
    if coordinator is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "the group coordinator is not running")
    return coordinator  # type: ignore[no-any-return]


def member_identity(request: Any) -> dict[str, Any]:
    """Who a SyncGroup or Heartbeat speaks for: member id, generation and (v3+) static instance id."""
    return {
        "member_id": request.member_id,
        "generation_id": request.generation_id,
        "group_instance_id": getattr(request, "group_instance_id", None),
    }


def ms(value: datetime.timedelta | int) -> int:
    """kio hands timeouts over as timedeltas; the coordinator counts milliseconds."""
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def client_host(ctx: RequestContext) -> str:
    # Kafka reports the client's address as InetAddress.toString(): "/127.0.0.1".
    host = ctx.peer.rsplit(":", 1)[0]
    return f"/{host}"


def by_topic(
    results: Mapping[TopicPartition, T], entry: Callable[[int, T], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Group per-partition results into Kafka's [{name, partitions: [...]}] shape, in order."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, value in results.items():
        topics.setdefault(tp.topic, []).append(entry(tp.partition, value))
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


def requested_offsets(
    ctx: RequestContext, request: Any
) -> tuple[dict[TopicPartition, OffsetAndMetadata], dict[TopicPartition, ErrorCode]]:
    """The offsets an OffsetCommit or TxnOffsetCommit asks to commit, TOPIC_AUTHORIZATION_FAILED
    for each partition of a topic the caller may not READ, and UNKNOWN_TOPIC_OR_PARTITION for each
    that does not exist (KafkaApis checks both requests alike, authorization first)."""
    offsets = {
        TopicPartition(t.name, p.partition_index): OffsetAndMetadata(
            committed_offset=p.committed_offset,
            committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata or "",
        )
        for t in request.topics
        for p in t.partitions
    }
    topics = ctx.broker.logs.topics
    refused = unauthorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    failed = {tp: ErrorCode.topic_authorization_failed if tp.topic in refused else ErrorCode.unknown_topic_or_partition
              for tp in offsets
              if tp.topic in refused or tp.topic not in topics or not 0 <= tp.partition < topics[tp.topic].partitions}
    wanted = {tp: v for tp, v in offsets.items() if tp not in failed}
    return wanted, failed


def commit_results(request: Any, results: Mapping[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
    """Each partition's error code, in the request's order."""
    ordered = {TopicPartition(t.name, p.partition_index): ErrorCode.none for t in request.topics for p in t.partitions}
    return by_topic(ordered | dict(results), lambda p, code: {"partition_index": p, "error_code": code})
