"""ShareFetch v1-2 (KIP-932).

Behaviour: a share group member's fetch from the partitions of its share session on this broker.
Epoch 0 opens the session (a member's earlier session is replaced and its records released; no
acknowledgements allowed: INVALID_REQUEST), later epochs continue it (INVALID_SHARE_SESSION_EPOCH,
SHARE_SESSION_NOT_FOUND) and may add partitions or forget some, -1 closes it after its
acknowledgements and releases the member's records. Piggy-backed acknowledgements are applied
first, each partition's outcome in AcknowledgeErrorCode (INVALID_RECORD_STATE for an offset the
member does not hold). Then up to MaxRecords records are acquired across the session's partitions
(records released or timed out first, then new ones) under a lock of share.record.lock.duration.ms,
and answered as whole stored batches with the acquired ranges and their delivery counts; with
nothing to acquire the fetch waits up to MaxWaitMs for records. MaxBytes 0 acquires nothing (the
fetch waits MaxWaitMs and answers no records), as Kafka answers it. Partition checks as a Fetch's:
TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER;
a share-partition its group coordinator never initialized (coordinator/share/initializer.py) is
UNKNOWN_SERVER_ERROR "Read operation on uninitialized share partition not allowed.", as Kafka's
SharePartition answers its share coordinator's refusal. READ on the group, else
GROUP_AUTHORIZATION_FAILED for the whole request.
Version notes: v2 (KIP-1206, KIP-1222) adds ShareAcquireMode (1: record-limit, exactly MaxRecords
at most; 0: batch-optimized, whole batches) and IsRenewAck (a request that only renews locks
fetches nothing), and the RENEW acknowledge type (4).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from coordinator.share.coordinator import ShareFetchParams, ShareFetchResult
from coordinator.share.partitions import FetchedPartition
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

from ..handler import Handler, RequestContext
from .group_common import ms
from .share_common import connection_id, leader, open_request, refused, share_topics

if TYPE_CHECKING:
    from protocol.request_types.share_fetch import ShareFetchRequest

_RECORD_LIMIT = 1


def _partition(ctx: RequestContext, index: int, tp: TopicPartition | None, error: KafkaError | None,
               ack: KafkaError | None, fetched: FetchedPartition | None) -> dict[str, object]:
    return {
        "partition_index": index, "error_code": error.code if error else ErrorCode.none,
        "error_message": error.message if error else None,
        "acknowledge_error_code": ack.code if ack else ErrorCode.none,
        "acknowledge_error_message": ack.message if ack else None,
        "current_leader": leader(ctx, tp),
        "records": b"".join(fetched.records) if fetched else b"",
        "acquired_records": [{"first_offset": r.first_offset, "last_offset": r.last_offset,
                              "delivery_count": r.delivery_count} for r in fetched.ranges] if fetched else [],
    }


def _responses(ctx: RequestContext, result: ShareFetchResult, named: dict[tuple[uuid.UUID, int], TopicPartition],
               errors: dict[tuple[uuid.UUID, int], KafkaError]) -> list[dict[str, object]]:
    """Partitions with records, an error or an acknowledgement outcome, grouped by topic."""
    keys = list(dict.fromkeys([*named, *errors, *result.fetched, *result.errors, *result.ack_errors]))
    topics: dict[uuid.UUID, list[dict[str, object]]] = {}
    for key in keys:
        fetched, ack = result.fetched.get(key), result.ack_errors.get(key)
        error = errors.get(key) or result.errors.get(key)
        if fetched is None and error is None and key not in result.ack_errors and key not in named:
            continue
        topics.setdefault(key[0], []).append(_partition(ctx, key[1], named.get(key), error, ack, fetched))
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]


async def handle(ctx: RequestContext, request: ShareFetchRequest) -> object:
    try:
        coordinator, group_id, member_id = open_request(ctx, request)
    except KafkaError as exc:
        return refused(ctx, exc)
    errors: dict[tuple[uuid.UUID, int], KafkaError] = {}
    named, acks = share_topics(ctx, request.topics, errors)
    forgotten = [(t.topic_id or uuid.UUID(int=0), int(p)) for t in request.forgotten_topics_data for p in t.partitions]
    params = ShareFetchParams(
        group_id=group_id, member_id=member_id, epoch=request.share_session_epoch,
        max_wait_ms=ms(request.max_wait), max_records=max(1, request.max_records),
        max_bytes=max(0, request.max_bytes), added=named, forgotten=forgotten, acks=acks,
        whole_batches=getattr(request, "share_acquire_mode", 0) != _RECORD_LIMIT,
        fetch=not getattr(request, "is_renew_ack", False), connection=connection_id(ctx))
    try:
        result = await coordinator.share_fetch(params)
    except KafkaError as exc:
        return refused(ctx, exc)
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
                        "acquisition_lock_timeout": result.lock_duration_ms,
                        "responses": _responses(ctx, result, named, errors), "node_endpoints": []})


HANDLER = Handler(api_key=ApiKey.SHARE_FETCH, min_version=1, max_version=2, handle=handle)
