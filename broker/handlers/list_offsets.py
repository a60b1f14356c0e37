"""ListOffsets v1-11.

Behaviour: timestamp -2 gives the log start offset, -1 the end (the high watermark, or the last
stable offset at READ_COMMITTED), -3 (v7+) the offset of the largest timestamp; any other value the
first offset whose batch has a timestamp at or after it (offset -1 if none, as Kafka answers).
-4 (v8+, earliest local) is the log start offset too, there being no remote storage; -5 (v9+,
latest tiered) and -6 (v11+, earliest pending upload) are offset -1, timestamp -1 and leader
epoch -1 with no error, as UnifiedLog.fetchOffsetByTimestamp answers for a log without remote
storage. A negative timestamp that is no sentinel, or a sentinel below the version that brought
it, is UNSUPPORTED_VERSION for that partition (ReplicaManager's timestampMinSupportedVersion). A
current_leader_epoch older than the partition's is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH; a partition led elsewhere is NOT_LEADER_OR_FOLLOWER.
Version notes: v2+ carries the isolation level; v4+ returns the leader epoch (0 in local mode); v10
adds a timeout for remote reads, not needed here; v11 (KIP-1023) adds the -6 sentinel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import IsolationLevel, PartitionLog, TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import denied, unauthorized
from ..handler import Handler, RequestContext, check_leader, isolation_level

if TYPE_CHECKING:
    from protocol.request_types.list_offsets import ListOffsetsPartition, ListOffsetsRequest

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -2, -1, -3, -4, -5, -6
# The first version that may ask for each sentinel timestamp (Kafka's timestampMinSupportedVersion).
SENTINEL_MIN_VERSION: Final = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                               EARLIEST_PENDING_UPLOAD: 11}


def timestamp_supported(timestamp: int, version: int) -> bool:
    return timestamp >= 0 or version >= SENTINEL_MIN_VERSION.get(timestamp, 1 << 15)


async def _lookup(ctx: RequestContext, tp: TopicPartition, p: ListOffsetsPartition,
                  isolation: IsolationLevel) -> dict[str, object]:
    epoch = check_leader(ctx.broker.cluster, tp, getattr(p, "current_leader_epoch", -1))
    plog = ctx.broker.logs.get_log(tp)
    return {"leader_epoch": epoch} | await _find(plog, p.timestamp, isolation)


async def _find(plog: PartitionLog, timestamp: int, isolation: IsolationLevel) -> dict[str, object]:
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        # Nothing is tiered: UnifiedLog answers no offset, at leader epoch -1.
        return {"timestamp": -1, "offset": -1, "leader_epoch": -1}
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return {"timestamp": -1, "offset": plog.log_start_offset}
    if timestamp == LATEST:
        committed = isolation is IsolationLevel.READ_COMMITTED
        return {"timestamp": -1, "offset": plog.last_stable_offset if committed else plog.high_watermark}
    if timestamp == MAX_TIMESTAMP:
        found = await plog.offset_for_max_timestamp()
    else:
        found = await plog.offset_for_timestamp(timestamp)
    if found is None:
        return {"timestamp": -1, "offset": -1}
    offset, ts = found
    if isolation is IsolationLevel.READ_COMMITTED and offset >= plog.last_stable_offset:
        return {"timestamp": -1, "offset": -1}
    return {"timestamp": ts, "offset": offset}


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> object:
    isolation = isolation_level(getattr(request, "isolation_level", 0))
    refused = unauthorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            entry: dict[str, object] = {"partition_index": p.partition_index}
            try:
                if topic.name in refused:
                    raise denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)
                if not timestamp_supported(p.timestamp, ctx.version):
                    raise KafkaError(ErrorCode.unsupported_version,
                                     f"timestamp {p.timestamp} is not supported by ListOffsets v{ctx.version}")
                entry |= await _lookup(ctx, TopicPartition(topic.name, p.partition_index), p, isolation)
                entry["error_code"] = ErrorCode.none
            except KafkaError as exc:
                entry |= {"error_code": exc.code, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    return ctx.respond({"throttle_time": 0, "topics": topics})


HANDLER = Handler(api_key=ApiKey.LIST_OFFSETS, min_version=1, max_version=11, handle=handle)
