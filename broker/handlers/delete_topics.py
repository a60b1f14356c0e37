"""DeleteTopics v1-6.

Behaviour: deletes topics by name (or by id, v6), their logs and metadata; internal topics cannot
be deleted. Unknown names give UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import INTERNAL_TOPICS

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from protocol.request_types.delete_topics import DeleteTopicsRequest, DeleteTopicsRequestV6Plus


def _is_v6_plus(entity: DeleteTopicsRequest) -> TypeIs[DeleteTopicsRequestV6Plus]:
    # by the class's version, not isinstance: the union's classes load only for type checking
    return entity.__version__ >= 6

log = logging.getLogger(__name__)


def _targets(ctx: RequestContext, request: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID | None]]:
    if _is_v6_plus(request):
        out: list[tuple[str | None, uuid.UUID | None]] = []
        for t in request.topics:
            if t.name is None:
                meta = ctx.broker.logs.topic_by_id(t.topic_id) if t.topic_id is not None else None
                out.append((meta.name if meta else None, t.topic_id))
            else:
                out.append((t.name, t.topic_id))
        return out
    return [(name, None) for name in request.topic_names]


async def _forget_committed_offsets(ctx: RequestContext, topic: str, topic_id: uuid.UUID | None) -> None:
    """Groups lose their offsets of a deleted topic (Kafka's handleDeletedPartitions), so a topic
    created again under the name is not read from stale positions, and share groups their
    share-partition states of it. The deletion stands either way."""
    groups, shares = ctx.broker.group_coordinator, ctx.broker.share_coordinator
    try:
        if groups is not None:
            await groups.topics_deleted([topic])
        if shares is not None and topic_id is not None:
            await shares.topics_deleted([topic_id])
    except KafkaError as exc:
        log.warning("offsets of deleted topic %s not dropped: %s", topic, exc)


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> object:
    responses = []
    if _is_v6_plus(request):
        named: set[str | None] = {t.name for t in request.topics}
    else:
        named = set(request.topic_names)
    for name, topic_id in _targets(ctx, request):
        entry: dict[str, object] = {"name": name, "topic_id": topic_id, "error_code": ErrorCode.none}
        try:
            if name is None:
                raise KafkaError(ErrorCode.unknown_topic_id, f"no topic has id {topic_id}")
            if not authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, name):
                if name not in named:
                    entry["name"] = None  # asked for by id: the name stays hidden, as in Kafka
                raise denied(ctx, AclOperation.DELETE, ResourceType.TOPIC, name if name in named else str(topic_id))
            if not ctx.broker.config.delete_topic_enable:
                raise KafkaError(ErrorCode.topic_deletion_disabled, "delete.topic.enable is false")
            if name in INTERNAL_TOPICS:
                raise KafkaError(ErrorCode.topic_authorization_failed, f"internal topic {name} cannot be deleted")
            meta = ctx.broker.logs.topics.get(name)
            await ctx.broker.logs.delete_topic(name)
            await _forget_committed_offsets(ctx, name, meta.topic_id if meta else None)
            entry["topic_id"] = meta.topic_id if meta else topic_id
        except KafkaError as exc:
            entry |= {"error_code": exc.code, "error_message": exc.message}
        responses.append(entry)
    return ctx.respond({"throttle_time": 0, "responses": responses})


HANDLER = Handler(api_key=ApiKey.DELETE_TOPICS, min_version=1, max_version=6, handle=handle)
