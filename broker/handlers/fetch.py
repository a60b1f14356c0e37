"""Fetch v4-18.

Behaviour: serves stored batch bytes, whole batches from the one holding the fetch offset,
within partition_max_bytes and the response max_bytes, but always at least one batch for the
first partition with data (KIP-74). Long poll: while fewer than min_bytes are ready it waits, up to
max_wait_ms, and any append to a fetched partition wakes it; a partition whose read fails (offset
out of range, not the leader, a fenced epoch) answers at once, as Kafka does, and so does one read
from a segment before the one holding its high watermark (LSO for read_committed): a read stops at a
segment's end, and Kafka's DelayedFetch completes a fetch "of older segments" at once.
READ_COMMITTED reads stop at the last stable offset and list the aborted transactions overlapping
the returned range; READ_UNCOMMITTED sends no aborted list. Control batches and aborted batches are
returned: consumers step over them.
A current_leader_epoch older than the partition's is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH, and a partition this broker does not lead NOT_LEADER_OR_FOLLOWER (clients
fetch from leaders only: no follower fetching); an isolation level other than 0 and 1 INVALID_REQUEST.
Fetch sessions (KIP-227, v7+): a fetch at session epoch 0 gets a session while
max.incremental.fetch.session.cache.slots allow; the session's later fetches name only partitions
that changed, every partition of the session is read and the long poll watches them all, and the
response carries only those with records, a new high watermark or log start offset, or an error
(broker/fetch_sessions.py). An unknown session is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
INVALID_FETCH_SESSION_EPOCH; epoch -1 fetches without a session, as librdkafka does.
consumer_byte_rate quotas (broker/quotas), as Kafka: a fetch reads at most what the client's quota
allows in one quota window; a response that puts the client over its quota is not sent: the answer
is empty (the session keeps its state), with throttle_time_ms, and the connection reads nothing more
for that long.
Version notes: v13+ name topics by id (KIP-516): an id this broker does not know (the zero UUID
included) is UNKNOWN_TOPIC_ID for that topic's partitions, and READ is checked on the name the id
has; a session keeps ids (broker/fetch_sessions.py), and a name it found for an id that now names
another topic (deleted and made again) is INCONSISTENT_TOPIC_ID. v14 adds no field. v15 moves
replica_id into replica_state. v16 (KIP-951): a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
partition carries current_leader and the response node_endpoints for those leaders (cluster mode).
v17 adds a follower's replica_directory_id and v18 the high watermark a follower knows (KIP-1166):
both only matter to followers, which eosbroker has none of (every broker reads the shared log), so
they are accepted and not used.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TypeAlias

from protocol.api_keys import ApiKey
from protocol.codec import encode_response
from protocol.errors import ErrorCode, KafkaError
from protocol.fast_responses import (
    AbortedTransaction,
    FetchPartitionResponse,
    FetchTopicResponse,
    NodeEndpoint,
    encode_fetch_response,
)
from protocol.fetch_request import FetchRequest
from storage.api import FetchDataInfo, IsolationLevel, PartitionLog, TopicPartition

from ..authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..authorizer.checks import NOTHING, authorized, denied, unauthorized
from ..fetch_sessions import CachedPartition, FetchContext, FetchSessionCache, TopicNames
from ..handler import Handler, RequestContext, check_leader, isolation_level
from ..quotas.manager import QuotaKind, now_ms
from .leader_discovery import LEADER_ERRORS, current_leader, leader_endpoints


def _partition(index: int, code: ErrorCode, info: FetchDataInfo | None, committed: bool) -> FetchPartitionResponse:
    if info is None:
        return {"partition_index": index, "error_code": code, "high_watermark": -1,
                "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                "preferred_read_replica": -1, "records": b""}
    aborted: list[AbortedTransaction] | None = None
    if committed:
        aborted = [{"producer_id": a.producer_id, "first_offset": a.first_offset}
                   for a in info.aborted_transactions or ()]
    return {
        "partition_index": index, "error_code": code, "high_watermark": info.high_watermark,
        "last_stable_offset": info.last_stable_offset, "log_start_offset": info.log_start_offset,
        "aborted_transactions": aborted, "preferred_read_replica": -1,
        "records": info.records,
    }


# Errors Kafka finds before reading (KafkaApis' "erroneous" partitions): they do not end a long
# poll. Any other error (found by the read) answers at once, as ReplicaManager does.
_CHECKED_BEFORE_READ = frozenset({ErrorCode.topic_authorization_failed, ErrorCode.unknown_topic_or_partition,
                                  ErrorCode.unknown_topic_id})


def _check_topic(ctx: RequestContext, p: CachedPartition, refused: frozenset[str]) -> str:
    """The partition's topic name, once the checks Kafka makes before the leader's: a v13+ id
    that names no topic, READ, and (ReplicaManager.readFromLocalLog) an id that is not the one
    the topic of that name has now."""
    topic = p.topic
    if topic is None:
        raise KafkaError(ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
    if topic in refused:
        raise denied(ctx, AclOperation.READ, ResourceType.TOPIC, topic)
    if p.topic_id is not None and (meta := ctx.broker.logs.topics.get(topic)) is not None \
            and meta.topic_id != p.topic_id:
        raise KafkaError(ErrorCode.inconsistent_topic_id,
                         "Topic ID in the fetch session did not match the topic ID in the log.")
    return topic


def _unchanged(plog: PartitionLog, p: CachedPartition, committed: bool) -> bool:
    """A session's partition with nothing to say: caught up, and its high watermark and log start
    offset as last sent. Its read is skipped (an incremental response would leave it out)."""
    end = plog.last_stable_offset if committed else plog.high_watermark
    return (p.fetch_offset == end and plog.high_watermark == p.high_watermark_sent
            and plog.log_start_offset == p.log_start_sent)


# Each partition's response, in the session's order.
Read: TypeAlias = list[tuple[CachedPartition, FetchPartitionResponse]]


async def _read_all(ctx: RequestContext, partitions: list[CachedPartition], max_bytes: int, isolation: IsolationLevel,
                    refused: frozenset[str], incremental: bool,
                    ) -> tuple[Read, int, bool]:
    """Each partition's response, the bytes read, and whether the long poll ends now whatever
    min_bytes says: a read failed, or a partition's read stopped at the end of a segment older than
    the one holding its end offset (Kafka's DelayedFetch: "fetching older segments", case F).
    An incremental fetch leaves out the partitions that have nothing to say without reading them."""
    committed = isolation is IsolationLevel.READ_COMMITTED
    remaining = max_bytes
    total = 0
    done = False
    out = []
    for p in partitions:
        try:
            tp = TopicPartition(_check_topic(ctx, p, refused), p.partition)
            check_leader(ctx.broker.cluster, tp, p.current_leader_epoch)
            plog = ctx.broker.logs.get_log(tp)
            if incremental and _unchanged(plog, p, committed):
                continue
            budget = max(min(p.partition_max_bytes, remaining), 0)
            # KIP-74: only the first partition with data may exceed its budget, with one whole
            # batch (Kafka's minOneMessage turns off after the first non-empty read); a later
            # partition whose first batch does not fit sends none (Kafka sends a cut slice).
            info = await plog.read(p.fetch_offset, budget if total else max(budget, 1), isolation,
                                   min_one=not total)
        except KafkaError as exc:
            out.append((p, _failed(ctx, p, exc.code, committed)))
            done = done or exc.code not in _CHECKED_BEFORE_READ
            continue
        done = done or info.older_segment
        size = info.size
        total += size
        remaining -= size
        out.append((p, _partition(p.partition, ErrorCode.none, info, committed)))
    return out, total, done


def _failed(ctx: RequestContext, p: CachedPartition, code: ErrorCode, committed: bool) -> FetchPartitionResponse:
    """A partition's error answer: offsets with OFFSET_OUT_OF_RANGE (the client resets from
    them), the current leader with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH from v16 (both
    found only once the topic is known)."""
    info, leader = None, None
    if p.topic is not None and code is ErrorCode.offset_out_of_range:
        plog = ctx.broker.logs.get_log(TopicPartition(p.topic, p.partition))
        info = FetchDataInfo(high_watermark=plog.high_watermark, last_stable_offset=plog.last_stable_offset,
                             log_start_offset=plog.log_start_offset)
    elif p.topic is not None and code in LEADER_ERRORS and ctx.version >= 16:
        leader = current_leader(ctx, TopicPartition(p.topic, p.partition))
    response = _partition(p.partition, code, info, committed)
    if leader is not None:
        response["current_leader"] = leader
    return response


def _node_endpoints(ctx: RequestContext, read: Read) -> list[NodeEndpoint]:
    """v16+: the addresses of the leaders named by current_leader (KIP-951)."""
    leaders = [r.get("current_leader", (-1, -1))[0] for _, r in read if r["error_code"] in LEADER_ERRORS]
    return leader_endpoints(ctx, (n for n in leaders if n >= 0))


def _count_fetch(ctx: RequestContext, responses: list[FetchTopicResponse]) -> None:
    """Kafka's BrokerTopicMetrics for Fetch, counted on the response that is sent (a long poll
    reads again on each wake-up; only the last read leaves). Unknown topics make no series."""
    if (metrics := ctx.broker.metrics) is None:
        return
    for topic in responses:
        name = topic["topic"]
        if name is None or name not in ctx.broker.logs.topics:  # None: an unknown topic id
            continue
        stats = metrics.topic(name)
        for p in topic["partitions"]:
            stats.total_fetch_requests += 1
            stats.failed_fetch_requests += p["error_code"] is not ErrorCode.none
            records = p["records"]
            stats.bytes_out += len(records) if isinstance(records, bytes | memoryview) else sum(map(len, records))


def _topic_names(ctx: RequestContext) -> TopicNames:
    """v13+: a topic id's name here (Kafka's metadataCache.topicIdsToNames); None before v13."""
    if ctx.version < 13:
        return None
    logs = ctx.broker.logs

    def name(topic_id: uuid.UUID) -> str | None:
        meta = logs.topic_by_id(topic_id)
        return None if meta is None else meta.name
    return name


def _refused_topics(ctx: RequestContext, request: FetchRequest, partitions: list[CachedPartition]) -> frozenset[str]:
    """READ on each topic; a follower's fetch (replica id >= 0) needs CLUSTER_ACTION instead."""
    if ctx.broker.authorizer is None:
        return NOTHING  # before any enum lookup: each costs ~0.5 us on Python 3.11, per request
    names = {p.topic for p in partitions if p.topic is not None}
    if request.replica_id >= 0:
        if authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            return frozenset()
        return frozenset(names)
    return unauthorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _waiters(ctx: RequestContext, partitions: list[CachedPartition], refused: frozenset[str]) -> list[PartitionLog]:
    logs = []
    for p in partitions:
        if p.topic is None or p.topic in refused:
            continue
        plog = ctx.broker.logs.find_log(TopicPartition(p.topic, p.partition))
        if plog is not None:
            logs.append(plog)
    return logs


def _unwatch(logs: list[PartitionLog], waiter: asyncio.Future[None] | None) -> None:
    if waiter is None:
        return
    for plog in logs:
        plog.remove_waiter(waiter)


def _sessions(ctx: RequestContext) -> FetchSessionCache:
    cache = ctx.broker.fetch_sessions
    if cache is None:
        slots = ctx.broker.config.max_incremental_fetch_session_cache_slots
        cache = ctx.broker.fetch_sessions = FetchSessionCache(slots)
    return cache


def _quota(ctx: RequestContext, request: FetchRequest) -> tuple[QuotaKind | None, int, int]:
    """(the consumer_byte_rate quotas, or None when no quota can apply, max_bytes, min_bytes):
    at most what the client's quota allows in one window is read (Kafka's getMaxValueInQuotaWindow)."""
    quotas = ctx.broker.quotas
    if quotas is None or not quotas.fetch.bounds or request.replica_id >= 0:
        return None, request.max_bytes, request.min_bytes
    most = quotas.fetch.max_in_window(ctx.session.principal.name, ctx.header.client_id or "")
    max_bytes = request.max_bytes if most is None else min(request.max_bytes, most)
    return quotas.fetch, max_bytes, min(request.min_bytes, max_bytes)


def _throttled(ctx: RequestContext, quota: QuotaKind, total: int) -> int:
    """Count the response's bytes; over the quota, take them back (the response goes empty)."""
    user, client_id, now = ctx.session.principal.name, ctx.header.client_id or "", now_ms()
    throttle_ms = quota.record(user, client_id, total, now)
    if throttle_ms:
        quota.unrecord(user, client_id, total, now)
        ctx.throttle_ms = throttle_ms
    return throttle_ms


async def handle(ctx: RequestContext, request: FetchRequest) -> object:
    isolation = isolation_level(request.isolation_level)
    context = _sessions(ctx).new_context(request, int(time.time() * 1000), _topic_names(ctx))
    if context.error is not ErrorCode.none:
        return encode_fetch_response(ctx.header.correlation_id, ctx.version, context.error, 0, [])
    quota, max_bytes, min_bytes = _quota(ctx, request)
    read, total = await _long_poll(ctx, request, context, isolation, max_bytes, min_bytes)
    if quota is not None and (throttle_ms := _throttled(ctx, quota, total)):
        return encode_fetch_response(ctx.header.correlation_id, ctx.version, ErrorCode.none, context.session_id, [],
                                     throttle_ms)
    responses = context.select(read, int(time.time() * 1000))
    _count_fetch(ctx, responses)
    endpoints = _node_endpoints(ctx, read) if ctx.version >= 16 else ()
    return encode_fetch_response(ctx.header.correlation_id, ctx.version, ErrorCode.none, context.session_id, responses,
                                 node_endpoints=endpoints)


async def _long_poll(ctx: RequestContext, request: FetchRequest, context: FetchContext, isolation: IsolationLevel,
                     max_bytes: int, min_bytes: int) -> tuple[Read, int]:
    """Read; while short of min_bytes and before max_wait_ms, wait for an append and read again."""
    deadline = time.monotonic() + request.max_wait_ms / 1000
    partitions = context.partitions
    refused = _refused_topics(ctx, request, partitions)
    waiter: asyncio.Future[None] | None = None
    logs: list[PartitionLog] = []
    try:
        while True:
            read, total, done = await _read_all(ctx, partitions, max_bytes, isolation, refused,
                                                context.incremental)
            left = deadline - time.monotonic()
            if total >= min_bytes or left <= 0 or done:
                return read, total
            if waiter is None or waiter.done():
                # Watch only once a read came up short (a busy consumer's fetch never does), then
                # read again: an append between that read and the watch must not be missed.
                _unwatch(logs, waiter)
                waiter, logs = asyncio.get_running_loop().create_future(), _waiters(ctx, partitions, refused)
                for plog in logs:
                    plog.add_waiter(waiter)
                if not logs:
                    return read, total
                continue
            try:
                await asyncio.wait_for(waiter, left)
            except TimeoutError:
                pass
    finally:
        _unwatch(logs, waiter)


def answer_error(ctx: RequestContext, request: FetchRequest, code: ErrorCode, message: str | None) -> bytes:
    """The whole request failed (broker/dispatch.py), answered as Kafka's FetchRequest.getErrorResponse:
    the top-level error_code (v7+) with no session, and up to v12 every partition with the error too,
    unknown (-1) offsets and null records; from v13 no partitions."""
    unknown = {"error_code": code, "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
               "records": None}
    responses = [{"topic": t.topic, "topic_id": t.topic_id,
                  "partitions": [{"partition_index": p.partition, **unknown} for p in t.partitions]}
                 for t in request.topics] if ctx.version < 13 else []
    return encode_response(ctx.header.correlation_id, ctx.respond({"error_code": code, "responses": responses}))


HANDLER = Handler(api_key=ApiKey.FETCH, min_version=4, max_version=18, handle=handle, answer_error=answer_error)
