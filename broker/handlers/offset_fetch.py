"""OffsetFetch v1-10.

Behaviour: the last committed offset of each requested partition, -1 (and no error) for none;
a null topic list (v2+) returns every offset the group has. With require_stable (v7+,
read_committed consumers) a partition with transactional offsets still awaiting their marker
answers UNSTABLE_OFFSET_COMMIT, and the client retries (KIP-447).
A consumer-protocol (KIP-848) member that names itself (v9 member id and epoch) must be in the
group at that epoch: UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH otherwise, as Kafka checks.
Version notes: v1-7 name one group; v8+ name several (groups array), each answered apart;
v9 adds the member id and epoch. v10 (KIP-848) names topics by id, in the request and the
response, as KafkaApis handles it: an id this broker does not know answers UNKNOWN_TOPIC_ID (offset
-1) for each partition asked, after the group's other topics; an all-offsets answer leaves out
offsets of a topic that has no id (no longer exists), as it could not be written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from coordinator.group.commands import FetchedOffset
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, unauthorized
from ..handler import Handler, RequestContext
from .group_common import RequestTopic, by_topic, group_coordinator, request_topics

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.offset_fetch import (
        OffsetFetchRequest,
        OffsetFetchRequestTopic,
        OffsetFetchRequestTopics,
        OffsetFetchRequestV8Plus,
    )


def _is_v8_plus(entity: OffsetFetchRequest) -> TypeIs[OffsetFetchRequestV8Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 8

TOPIC_IDS_VERSION = 10


def _partitions(topics: list[RequestTopic] | None) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [TopicPartition(t.name, int(p)) for t in topics if t.name is not None for p in t.partitions]


def _unknown_ids(topics: list[RequestTopic] | None) -> list[dict[str, object]]:
    return [{"topic_id": t.topic_id, "partitions": [
        {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
         "error_code": ErrorCode.unknown_topic_id} for p in t.partitions]}
        for t in topics or () if t.name is None]


def _with_ids(ctx: RequestContext, topics: list[dict[str, object]]) -> list[dict[str, object]]:
    """v10's answer names each topic by its id; one that has none now is left out (KafkaApis)."""
    known = ctx.broker.logs.topics
    return [t | {"topic_id": known[name].topic_id}
            for t in topics if isinstance(name := t["name"], str) and name in known]


def _visible(ctx: RequestContext, wanted: list[TopicPartition] | None,
             fetched: list[FetchedOffset]) -> list[FetchedOffset]:
    """Kafka's handleOffsetFetch: offsets of topics the caller may not DESCRIBE are left out of an
    all-offsets answer, and named ones answer TOPIC_AUTHORIZATION_FAILED."""
    if ctx.broker.authorizer is None:
        return fetched
    refused = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (f.topic_partition.topic for f in fetched),
                           log_denied=wanted is not None)
    if wanted is None:
        return [f for f in fetched if f.topic_partition.topic not in refused]
    return [FetchedOffset(topic_partition=f.topic_partition, error=ErrorCode.topic_authorization_failed)
            if f.topic_partition.topic in refused else f for f in fetched]


async def _group(ctx: RequestContext, group_id: str,
                 topics: Sequence[OffsetFetchRequestTopic | OffsetFetchRequestTopics] | None, stable: bool,
                 member: tuple[str | None, int] = (None, -1)) -> dict[str, object]:
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return {"group_id": group_id, "error_code": ErrorCode.group_authorization_failed, "topics": []}
    by_id = ctx.version >= TOPIC_IDS_VERSION
    asked = None if topics is None else request_topics(ctx, topics, by_id, partitions="partition_indexes")
    wanted = _partitions(asked)
    try:
        fetched = await group_coordinator(ctx).fetch_offsets(
            group_id, wanted, stable, member_id=member[0], member_epoch=member[1])
    except KafkaError as exc:
        return {"group_id": group_id, "error_code": exc.code, "topics": []}
    results = {f.topic_partition: f for f in _visible(ctx, wanted, fetched)}
    answered = by_topic(results, lambda p, f: {
        "partition_index": p,
        "committed_offset": f.committed_offset,
        "committed_leader_epoch": f.committed_leader_epoch,
        "metadata": f.metadata,
        "error_code": f.error,
    })
    if by_id:
        answered = _with_ids(ctx, answered) + _unknown_ids(asked)
    return {"group_id": group_id, "error_code": ErrorCode.none, "topics": answered}


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> object:
    stable = bool(getattr(request, "require_stable", False))
    if _is_v8_plus(request):
        groups = [await _group(ctx, g.group_id, g.topics, stable, (getattr(g, "member_id", None),
                                                                     getattr(g, "member_epoch", -1)))
                  for g in request.groups]
        return ctx.respond({"throttle_time": 0, "groups": groups})
    group = await _group(ctx, request.group_id, request.topics, stable)
    return ctx.respond({"throttle_time": 0, "topics": group["topics"],
                        "error_code": group["error_code"]})


HANDLER = Handler(api_key=ApiKey.OFFSET_FETCH, min_version=1, max_version=10, handle=handle)
