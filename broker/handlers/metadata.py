"""Metadata v0-12.

Behaviour: one node (this broker) leads every partition with leader epoch 0. Unknown topics are
created when auto.create.topics.enable is set and the request allows it (v4+ flag), with
num.partitions partitions. Topic ids are real, stable UUIDs (v10+). A null topic list (v1+) or an
empty one at v0 means all topics; internal topics are included, flagged is_internal, as Kafka does.
Version notes: v12 may name topics by id only.
"""

from __future__ import annotations

import logging
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicMetadata, validate_topic_name

from ..handler import Handler, RequestContext

log = logging.getLogger(__name__)


def topic_entry(meta: TopicMetadata, node_id: int) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "name": meta.name,
        "topic_id": meta.topic_id,
        "is_internal": meta.internal,
        "partitions": [
            {"partition_index": p, "leader_id": node_id, "leader_epoch": 0,
             "replica_nodes": [node_id], "isr_nodes": [node_id], "offline_replicas": []}
            for p in range(meta.partitions)
        ],
        "topic_authorized_operations": -2147483648,
    }


def error_entry(name: str | None, code: ErrorCode, topic_id: Any = None) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "partitions": []}


async def resolve_topic(ctx: RequestContext, name: str, allow_create: bool) -> dict[str, Any]:
    logs = ctx.broker.logs
    meta = logs.topics.get(name)
    if meta is not None:
        return topic_entry(meta, ctx.broker.node_id)
    try:
        validate_topic_name(name)
    except KafkaError:
        return error_entry(name, ErrorCode.invalid_topic_exception)
    if not (allow_create and ctx.broker.config.auto_create_topics_enable):
        return error_entry(name, ErrorCode.unknown_topic_or_partition)
    try:
        meta = await logs.create_topic(name, ctx.broker.config.num_partitions)
    except KafkaError as exc:
        created = logs.topics.get(name)  # by a concurrent request while this one waited its turn
        return topic_entry(created, ctx.broker.node_id) if created else error_entry(name, exc.code)
    log.info("auto-created topic %s for %s", name, ctx.peer)
    # Kafka answers LEADER_NOT_AVAILABLE while a new topic's leaders are elected; ours are ready.
    return topic_entry(meta, ctx.broker.node_id)


async def handle(ctx: RequestContext, request: Any) -> Any:
    logs = ctx.broker.logs
    allow_create = getattr(request, "allow_auto_topic_creation", True)
    topics = request.topics
    if topics is None or (ctx.version == 0 and not topics):
        entries = [topic_entry(m, ctx.broker.node_id) for m in list(logs.topics.values())]
    else:
        entries = []
        for t in topics:
            if t.name is None and ctx.version < 12:
                # As KafkaApis: versions 10 and 11 carry topic ids but may not name topics by them.
                raise KafkaError(ErrorCode.invalid_request, f"topic name can not be null for version {ctx.version}")
            if t.name is None:
                meta = logs.topic_by_id(t.topic_id)
                entries.append(topic_entry(meta, ctx.broker.node_id) if meta else
                               error_entry(None, ErrorCode.unknown_topic_id, t.topic_id))
            else:
                entries.append(await resolve_topic(ctx, t.name, allow_create))
    host, port = ctx.broker.config.advertised_for(ctx.session.listener_name)
    return ctx.respond({
        "throttle_time": 0,
        "brokers": [{"node_id": ctx.broker.node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": ctx.broker.cluster_id,
        "controller_id": ctx.broker.node_id,
        "topics": entries,
        "cluster_authorized_operations": -2147483648,
    })


HANDLER = Handler(api_key=ApiKey.METADATA, min_version=0, max_version=12, handle=handle)
