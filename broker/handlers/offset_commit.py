"""OffsetCommit v2-10.

Behaviour: the offsets are appended to the group's __consumer_offsets partition before the
answer, so an acknowledged commit survives a crash. A group without members accepts commits with
generation -1 and an empty member id (assign() consumers); once it has members only the current
generation's members may commit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID;
REBALANCE_IN_PROGRESS between JoinGroup and SyncGroup). In a consumer-protocol (KIP-848) group
the generation field carries the member epoch: another epoch is STALE_MEMBER_EPOCH, and its
members must use v9+ (UNSUPPORTED_VERSION below, as Kafka answers). Unknown partitions get
UNKNOWN_TOPIC_OR_PARTITION, metadata over offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE.
Version notes: v2-4 carry retention_time_ms (-1: the broker's offsets.retention.minutes); v6+
committed_leader_epoch; v7+ group_instance_id. v10 (KIP-848; Kafka 4.1+ consumers of the consumer
protocol send it when they know every topic's id) names topics by id only, in the request and the
response: as KafkaApis does, an id is resolved to its topic from this broker's metadata and an
unknown one is UNKNOWN_TOPIC_ID for each of its partitions, before authorization and the
partition checks, which then apply as to a name. The offsets are stored by topic name, as in
every version; those of a deleted topic are dropped with it (DeleteTopics), so a topic created
again under the same name never reads them, which is what Kafka's stored topic id guards. The
response is written without kio (protocol/offset_commit_response.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import KafkaError
from protocol.offset_commit_response import encode_offset_commit_response

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import require
from ..handler import Handler, RequestContext
from .group_common import commit_results, group_coordinator, ms, request_topics, requested_offsets

if TYPE_CHECKING:
    from protocol.request_types.offset_commit import OffsetCommitRequest

TOPIC_IDS_VERSION = 10


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> object:
    require(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    topics = request_topics(ctx, request.topics, by_id=ctx.version >= TOPIC_IDS_VERSION)
    wanted, results = requested_offsets(ctx, topics)
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
                api_version=ctx.version,
            )
        except KafkaError as exc:
            results |= dict.fromkeys(wanted, exc.code)
    return encode_offset_commit_response(ctx.header.correlation_id, ctx.version, commit_results(topics, results))


HANDLER = Handler(api_key=ApiKey.OFFSET_COMMIT, min_version=2, max_version=10, handle=handle)
