"""Metadata v0-13.

Behaviour: the live brokers and each partition's leader and leader epoch from the ClusterView (in
local mode this broker leads every partition at epoch 0); replicas and ISR are the brokers that
could lead the partition at once, leader first. A partition without a live leader is
LEADER_NOT_AVAILABLE with leader -1, so clients ask again. The controller is this broker: any
broker can change topics, their state being shared (local mode: the only one). Unknown topics are
created when auto.create.topics.enable is set and the request allows it (v4+ flag), with
num.partitions partitions; the request that creates one gets LEADER_NOT_AVAILABLE for it, as in
Kafka. Topic ids are real, stable UUIDs (v10+). A null topic list (v1+) or an
empty one at v0 means all topics; internal topics are included, flagged is_internal, as Kafka does.
Version notes: v12 may name topics by id only. v13 (KIP-1102) adds a top-level error code, for
REBOOTSTRAP_REQUIRED (the client's metadata is stale: rebootstrap). Kafka's KafkaApis answers NONE
there (4.3 and 4.4; 4.4 sends REBOOTSTRAP_REQUIRED only on ApiVersions v5, for a client that names
another cluster or node id), and so does this broker; a request that fails as a whole carries its
error there and on every topic, as MetadataRequest.getErrorResponse does (broker/error_response.py).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.metadata_response import NO_OPERATIONS, MetadataPartition, MetadataTopic, encode_metadata_response
from storage.api import BrokerEndpoint, ClusterView, PartitionLeader, TopicMetadata, validate_topic_name

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, authorized_operations, cluster_operations, may_create_topic, unauthorized
from ..handler import Handler, RequestContext

if TYPE_CHECKING:
    from protocol.request_types.metadata import MetadataRequest

log = logging.getLogger(__name__)


_NO_LEADER: Final = PartitionLeader(-1, -1)


def live_brokers(ctx: RequestContext) -> list[BrokerEndpoint]:
    """The live brokers, each with its address on the listener the client came in on, as Kafka
    answers; a broker without that listener is left out, as in Kafka."""
    return on_listener(ctx, ctx.broker.cluster.live_brokers())


def on_listener(ctx: RequestContext, brokers: list[BrokerEndpoint]) -> list[BrokerEndpoint]:
    """`brokers` as reached over the client's listener (this broker: its advertised address)."""
    listener = ctx.session.listener_name
    host, port = ctx.broker.config.advertised_for(listener)
    out = []
    for broker in brokers:
        if broker.node_id == ctx.broker.node_id:
            out.append(broker._replace(host=host, port=port))
        elif (endpoint := broker.on(listener)) is not None:
            out.append(endpoint)
    return out


def partition_entry(index: int, leader: PartitionLeader | None, replicas: list[int]) -> MetadataPartition:
    leader = leader or _NO_LEADER
    code = ErrorCode.none if leader.leader >= 0 else ErrorCode.leader_not_available
    return {"error_code": code, "partition_index": index, "leader_id": leader.leader,
            "leader_epoch": leader.leader_epoch, "replica_nodes": replicas, "isr_nodes": replicas,
            "offline_replicas": []}


def topic_entry(meta: TopicMetadata, cluster: ClusterView) -> MetadataTopic:
    return {
        "error_code": ErrorCode.none,
        "name": meta.name,
        "topic_id": meta.topic_id,
        "is_internal": meta.internal,
        "partitions": [partition_entry(p, leader, replicas)
                       for p, (leader, replicas) in enumerate(cluster.partition_states(meta.name, meta.partitions))],
        "topic_authorized_operations": NO_OPERATIONS,
    }


def error_entry(name: str | None, code: ErrorCode, topic_id: uuid.UUID | None = None) -> MetadataTopic:
    return {"error_code": code, "name": name, "topic_id": topic_id, "partitions": []}


async def resolve_topic(ctx: RequestContext, name: str, allow_create: bool) -> MetadataTopic:
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        # Checked before existence, so that a caller learns nothing of topics it may not see.
        return error_entry(name, ErrorCode.topic_authorization_failed)
    logs = ctx.broker.logs
    meta = logs.topics.get(name) or await logs.lookup_topic(name)  # cluster mode: made elsewhere just now?
    if meta is not None:
        return topic_entry(meta, ctx.broker.cluster)
    try:
        validate_topic_name(name)
    except KafkaError:
        return error_entry(name, ErrorCode.invalid_topic_exception)
    if not (allow_create and ctx.broker.config.auto_create_topics_enable):
        return error_entry(name, ErrorCode.unknown_topic_or_partition)
    if not may_create_topic(ctx, name):
        return error_entry(name, ErrorCode.topic_authorization_failed)
    try:
        meta = await logs.create_topic(name, ctx.broker.config.num_partitions)
    except KafkaError as exc:
        created = logs.topics.get(name)  # by a concurrent request while this one waited its turn
        return topic_entry(created, ctx.broker.cluster) if created else error_entry(name, exc.code)
    log.info("auto-created topic %s for %s", name, ctx.peer)
    # As Kafka's AutoTopicCreationManager: the request that creates a topic learns only that it is
    # coming (LEADER_NOT_AVAILABLE, no partitions) and asks again, even though local partitions
    # are ready at once. Clients rely on it: kafka-go's tests read a deleted topic's partitions
    # through a creating Metadata request and expect none.
    return error_entry(name, ErrorCode.leader_not_available)


async def handle(ctx: RequestContext, request: MetadataRequest) -> object:
    logs = ctx.broker.logs
    allow_create = getattr(request, "allow_auto_topic_creation", True)
    topics = request.topics
    if topics is None or (ctx.version == 0 and not topics):
        # All topics: those the caller may not DESCRIBE are left out, not reported.
        hidden = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, logs.topics, log_denied=False)
        entries = [topic_entry(m, ctx.broker.cluster) for m in list(logs.topics.values()) if m.name not in hidden]
    else:
        entries = []
        for t in topics:
            if t.name is None and ctx.version < 12:
                # As KafkaApis: versions 10 and 11 carry topic ids but may not name topics by them.
                raise KafkaError(ErrorCode.invalid_request, f"topic name can not be null for version {ctx.version}")
            if t.name is None:
                meta = logs.topic_by_id(t.topic_id) if t.topic_id is not None else None
                if meta is not None and not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, meta.name):
                    entries.append(error_entry(None, ErrorCode.topic_authorization_failed, t.topic_id))
                    continue
                entries.append(topic_entry(meta, ctx.broker.cluster) if meta else
                               error_entry(None, ErrorCode.unknown_topic_id, t.topic_id))
            else:
                entries.append(await resolve_topic(ctx, t.name, allow_create))
    if getattr(request, "include_topic_authorized_operations", False):
        for entry in entries:
            if entry["error_code"] is ErrorCode.none and entry["name"] is not None:
                entry["topic_authorized_operations"] = authorized_operations(ctx, ResourceType.TOPIC, entry["name"])
    return encode_metadata_response(
        ctx.header.correlation_id, ctx.version,
        brokers=[{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in live_brokers(ctx)],
        cluster_id=ctx.broker.cluster_id, controller_id=ctx.broker.node_id, topics=entries,
        cluster_authorized_operations=cluster_operations(
            ctx, getattr(request, "include_cluster_authorized_operations", False)))


HANDLER = Handler(api_key=ApiKey.METADATA, min_version=0, max_version=13, handle=handle)
