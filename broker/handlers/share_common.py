"""Helpers shared by the share group handlers (not a handler: it has no HANDLER)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from coordinator.share import sessions
from coordinator.share.coordinator import AckBatches, ShareAckRequest, ShareCoordinator
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied_message, require
from ..handler import RequestContext, check_leader
from .leader_discovery import current_leader

if TYPE_CHECKING:
    from protocol.request_types import share_acknowledge as acknowledge
    from protocol.request_types import share_fetch as fetch
    from protocol.request_types.share_acknowledge import ShareAcknowledgeRequest
    from protocol.request_types.share_fetch import ShareFetchRequest

__all__ = ("ack_batches", "leader", "open_request", "refused", "resolve", "share_coordinator", "share_topics")

# ShareFetch and ShareAcknowledge v2 (KIP-1222) added the RENEW acknowledge type.
_RENEW = 4
_RENEW_FROM_VERSION = 2


def share_coordinator(ctx: RequestContext) -> ShareCoordinator:
    """The coordinator, while share.version enables share groups (Kafka's isShareGroupProtocolEnabled)."""
    coordinator = ctx.broker.share_coordinator
    if ctx.broker.features.level("share.version") < 1:
        raise KafkaError(ErrorCode.unsupported_version, "The share group protocol is not enabled (share.version 0).")
    if coordinator is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "The share coordinator is not running.")
    return coordinator


def resolve(ctx: RequestContext, topic_id: uuid.UUID | None, partition: int) -> TopicPartition:
    """The topic partition a share request names by id, checked as a Fetch checks it: the caller
    may READ the topic, it exists, and this broker leads it."""
    meta = ctx.broker.logs.topic_by_id(topic_id) if topic_id is not None else None
    if meta is None:
        raise KafkaError(ErrorCode.unknown_topic_id, f"Topic id {topic_id} is not known to this broker")
    if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, meta.name):
        raise KafkaError(ErrorCode.topic_authorization_failed,
                         denied_message(ctx, AclOperation.READ, ResourceType.TOPIC, meta.name))
    if not 0 <= partition < meta.partitions:
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{meta.name}-{partition} does not exist")
    tp = TopicPartition(meta.name, partition)
    check_leader(ctx.broker.cluster, tp)
    return tp


def ack_batches(version: int, batches: Sequence[fetch.AcknowledgementBatch | acknowledge.AcknowledgementBatch],
                ) -> AckBatches:
    out: AckBatches = []
    for b in batches:
        types = tuple(int(t) for t in b.acknowledge_types)
        if not types:
            raise KafkaError(ErrorCode.invalid_request, f"acknowledgement batch {b.first_offset}-{b.last_offset} "
                                                        "has no acknowledge types")
        if version < _RENEW_FROM_VERSION and _RENEW in types:
            raise KafkaError(ErrorCode.invalid_request, f"acknowledge type RENEW needs version {_RENEW_FROM_VERSION}")
        out.append((int(b.first_offset), int(b.last_offset), types))
    return out


def share_topics(ctx: RequestContext, topics: Sequence[fetch.FetchTopic | acknowledge.AcknowledgeTopic],
                 errors: dict[tuple[uuid.UUID, int], KafkaError]) -> tuple[dict[tuple[uuid.UUID, int],
                                                                               TopicPartition], ShareAckRequest]:
    """The partitions a request names, and their acknowledgements; a partition that fails its
    checks goes into errors instead."""
    named: dict[tuple[uuid.UUID, int], TopicPartition] = {}
    acks: ShareAckRequest = {}
    for topic in topics:
        topic_id = topic.topic_id or uuid.UUID(int=0)
        for p in topic.partitions:
            key = (topic_id, int(p.partition_index))
            try:
                tp = resolve(ctx, topic.topic_id, key[1])
                batches = ack_batches(ctx.version, p.acknowledgement_batches)
            except KafkaError as exc:
                errors[key] = exc
                continue
            named[key] = tp
            if batches:
                acks[key] = (tp, batches)
    return named, acks


def connection_id(ctx: RequestContext) -> str:
    return sessions.connection_id(ctx.session.listener_name, ctx.peer)


def refused(ctx: RequestContext, exc: KafkaError) -> object:
    """A ShareFetch or ShareAcknowledge answered as a whole with one error."""
    return ctx.respond({"throttle_time": 0, "error_code": exc.code, "error_message": exc.message,
                        "acquisition_lock_timeout": 0, "responses": [], "node_endpoints": []})


def open_request(ctx: RequestContext, request: ShareFetchRequest | ShareAcknowledgeRequest,
                 ) -> tuple[ShareCoordinator, str, str]:
    """READ on the group, then a group and a member named (Kafka authorizes first): the
    coordinator, the group id and the member id."""
    group_id, member_id = request.group_id, request.member_id
    require(ctx, AclOperation.READ, ResourceType.GROUP, group_id or "")
    if not group_id or not member_id:
        raise KafkaError(ErrorCode.invalid_request, "GroupId and MemberId must be set")
    return share_coordinator(ctx), group_id, member_id


def leader(ctx: RequestContext, tp: TopicPartition | None) -> dict[str, int]:
    leader_id, epoch = current_leader(ctx, tp) if tp is not None else (-1, -1)
    return {"leader_id": leader_id, "leader_epoch": epoch}
