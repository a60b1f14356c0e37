"""Helpers shared by the consumer-group handlers (not a handler: it has no HANDLER)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypedDict, TypeVar

from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.offsets import OffsetAndMetadata
from protocol.errors import ErrorCode, KafkaError
from protocol.offset_commit_response import CommittedTopic
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import unauthorized
from ..handler import RequestContext

__all__ = (
    "RequestTopic", "by_topic", "client_host", "commit_results", "group_coordinator", "member_identity", "ms",
    "request_topics", "requested_offsets",
)

T = TypeVar("T")


def group_coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator = ctx.broker.group_coordinator
    if coordinator is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "the group coordinator is not running")
    return coordinator


class _MemberRequest(Protocol):
    """What a SyncGroup or Heartbeat request names its member by, in every version."""

    @property
    def member_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...


class MemberIdentity(TypedDict):
    member_id: str
    generation_id: int
    group_instance_id: str | None


def member_identity(request: _MemberRequest) -> MemberIdentity:
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
    results: Mapping[TopicPartition, T], entry: Callable[[int, T], dict[str, object]]
) -> list[dict[str, object]]:
    """Group per-partition results into Kafka's [{name, partitions: [...]}] shape, in order."""
    topics: dict[str, list[dict[str, object]]] = {}
    for tp, value in results.items():
        topics.setdefault(tp.topic, []).append(entry(tp.partition, value))
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


class RequestTopic(NamedTuple):
    """A topic of an offset request. From the versions that name topics by id (OffsetCommit and
    OffsetFetch v10, KIP-848) topic_id is set and name is the topic's, or None for an id this
    cluster does not have (UNKNOWN_TOPIC_ID); before them topic_id is None."""

    name: str | None
    topic_id: uuid.UUID | None
    # Dynamic: partition entities (OffsetCommit, TxnOffsetCommit) or bare indexes (OffsetFetch).
    partitions: Sequence[Any]


# Dynamic: the topic entities of OffsetCommit, TxnOffsetCommit or OffsetFetch, of any version.
def request_topics(ctx: RequestContext, topics: Sequence[Any], by_id: bool,
                   partitions: str = "partitions") -> list[RequestTopic]:
    """`topics` of a request, their ids resolved to names as KafkaApis resolves them (from the
    metadata this broker has, as Produce v13 does)."""
    if not by_id:
        return [RequestTopic(t.name, None, getattr(t, partitions)) for t in topics]
    logs = ctx.broker.logs
    return [RequestTopic(meta.name if (meta := logs.topic_by_id(t.topic_id)) is not None else None, t.topic_id,
                         getattr(t, partitions)) for t in topics]


def requested_offsets(
    ctx: RequestContext, request_topics: Sequence[RequestTopic]
) -> tuple[dict[TopicPartition, OffsetAndMetadata], dict[TopicPartition, ErrorCode]]:
    """The offsets an OffsetCommit or TxnOffsetCommit asks to commit, TOPIC_AUTHORIZATION_FAILED
    for each partition of a topic the caller may not READ, and UNKNOWN_TOPIC_OR_PARTITION for each
    that does not exist (KafkaApis checks both requests alike, authorization first). Topics of an
    unknown id are left to commit_results."""
    named = [(t.name, t) for t in request_topics if t.name is not None]
    offsets = {
        TopicPartition(name, p.partition_index): OffsetAndMetadata(
            committed_offset=p.committed_offset,
            committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata or "",
        )
        for name, t in named
        for p in t.partitions
    }
    topics = ctx.broker.logs.topics
    refused = unauthorized(ctx, AclOperation.READ, ResourceType.TOPIC, (name for name, _ in named))
    failed = {tp: ErrorCode.topic_authorization_failed if tp.topic in refused else ErrorCode.unknown_topic_or_partition
              for tp in offsets
              if tp.topic in refused or tp.topic not in topics or not 0 <= tp.partition < topics[tp.topic].partitions}
    wanted = {tp: v for tp, v in offsets.items() if tp not in failed}
    return wanted, failed


def commit_results(request_topics: Sequence[RequestTopic],
                   results: Mapping[TopicPartition, ErrorCode]) -> list[CommittedTopic]:
    """Each partition's error code, in the request's order, one entry per topic (by id where the
    request names topics by id); a topic of an unknown id is UNKNOWN_TOPIC_ID throughout."""
    topics: dict[str | uuid.UUID | None, tuple[RequestTopic, dict[int, ErrorCode]]] = {}
    for t in request_topics:
        key = t.name if t.topic_id is None else t.topic_id
        first, codes = topics.setdefault(key, (t, {}))
        for p in t.partitions:
            codes[p.partition_index] = ErrorCode.unknown_topic_id if t.name is None else \
                results.get(TopicPartition(t.name, p.partition_index), ErrorCode.none)
    return [{"name": first.name, "topic_id": first.topic_id,
             "partitions": [{"partition_index": p, "error_code": code} for p, code in codes.items()]}
            for first, codes in topics.values()]
