"""Produce v0-13 (v3-13 parsed).

Behaviour: each partition's batch goes to that partition's log actor as the request's bytes
(protocol/produce_request.py reads the request, not kio: a large frame's records are views of it,
not copies); the log validates headers and CRCs, assigns offsets and writes. Partition data holding
more (or less) than one batch is INVALID_RECORD, as in Kafka, and nothing of it is written; the
request's other partitions go on. acks=0 gets no response (and a failure closes the connection, as
in Kafka); acks 1 and -1 are the same (locally the write is in the page cache when we answer; in
cluster mode it is committed to PostgreSQL, which every broker reads). The handler returns once
every batch is in its log (log_actor.submit: sequenced at once, or queued behind the log's work in
progress, which keeps the order requests came in); if any still waits for its commit, its answer is
a Later and the connection goes on to its next request meanwhile (broker/connection/answers.py:
answers still leave in request order). A partition this broker does not lead is
NOT_LEADER_OR_FOLLOWER; from v10 (KIP-951) such a partition also names its current leader and epoch,
and the response carries that leader's address. A client over its producer_byte_rate quota has its
answer at once with throttle_time_ms, and its connection reads nothing more for that long (KIP-219).
Transactional batches: v3-11 (Transactions V1) must go to partitions the producer added with
AddPartitionsToTxn; under v12+ (Transactions V2) the broker adds them to the transaction itself,
through the coordinator, before writing (coordinator/transaction/verification.py); if the last
transaction's markers are still being written it retries for
add.partitions.to.txn.retry.backoff.max.ms before answering CONCURRENT_TRANSACTIONS, as Kafka does.
Version notes: v0-2 are advertised so that librdkafka < 2.11.1 enables compression, but they
carry message formats 0/1 and are refused (as Kafka 4 does). v11 knows TRANSACTION_ABORTABLE;
v12 means Transactions V2; v13 names topics by id (UNKNOWN_TOPIC_ID for an id not known).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass

from coordinator.transaction.verification import (
    AddRetry,
    add_partitions_for_produce,
    check_first_sequence_v2,
    verify_remotely,
    verify_transactional_batches,
)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.fast_responses import NodeEndpoint, ProducePartitionResponse, encode_produce_response
from protocol.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.record_batch import RecordBatchHeader, check_batch
from storage.api import INTERNAL_TOPICS, LogAppendInfo, TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import NOTHING, denied, require, unauthorized
from ..handler import NO_RESPONSE, CloseConnection, Handler, Later, RequestContext, check_leader
from ..metrics.counters import TopicStats
from ..quotas.manager import now_ms
from .leader_discovery import LEADER_ERRORS, current_leader, leader_endpoints
from .txn_routing import coordinator_add, remote_verifier

log = logging.getLogger(__name__)


def _error(index: int, code: ErrorCode, message: str | None = None,
           record_errors: Sequence[tuple[int, str]] = ()) -> ProducePartitionResponse:
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time": -1,
            "log_start_offset": -1, "error_message": message,
            "record_errors": [{"batch_index": i, "batch_index_error_message": m} for i, m in record_errors]}


def _check_one_batch(records: bytes | memoryview, version: int) -> RecordBatchHeader:
    """Kafka's ProduceRequest.validateRecords (v3+): exactly one batch per partition. Producers
    send one; a second one's sequences could not be checked against state the first has not
    yet advanced, so the whole partition's data is refused and nothing is written. Returns the
    batch's header for the checks that follow (the log verifies the CRC)."""
    if not records:
        raise KafkaError(ErrorCode.invalid_record,
                         f"Produce v{version} requests must have at least one record batch per partition")
    first = check_batch(records, 0, len(records), verify_crc=False)
    if first.size < len(records):
        raise KafkaError(ErrorCode.invalid_record, f"Produce v{version} requests may carry only one "
                         "record batch per partition")
    return first


Parsed = RecordBatchHeader | KafkaError | None  # a partition's one batch, why it has none, or null records


def _parse(records: bytes | memoryview | None, version: int) -> Parsed:
    """Each partition's header is parsed once per request, for the transaction and the append."""
    if records is None:
        return None
    try:
        return _check_one_batch(records, version)
    except KafkaError as exc:
        return exc


def _batch_of(parsed: Parsed) -> RecordBatchHeader:
    if parsed is None:
        raise KafkaError(ErrorCode.corrupt_message, "partition data carries null records")
    if isinstance(parsed, KafkaError):
        raise parsed
    return parsed


def _topic_name(ctx: RequestContext, topic: TopicProduceData) -> str | None:
    if ctx.version < 13:
        return str(topic.name)
    meta = None if topic.topic_id is None else ctx.broker.logs.topic_by_id(topic.topic_id)
    return None if meta is None else meta.name


def _transactional_batches(ctx: RequestContext, request: ProduceRequest, names: list[str | None],
                           parsed: list[list[Parsed]], forbidden: frozenset[str],
                           ) -> list[tuple[TopicPartition, RecordBatchHeader]]:
    """(partition, header) of each partition's transactional batch, for the partitions that can
    take it (not those of topics the producer may not WRITE: they are never added to its
    transaction, nor data the append refuses anyway)."""
    found = []
    for name, t, headers in zip(names, request.topic_data, parsed, strict=True):
        if name is None or name in forbidden or name in INTERNAL_TOPICS:
            continue
        for part, header in zip(t.partition_data, headers, strict=True):
            if type(header) is RecordBatchHeader and header.is_transactional:
                tp = TopicPartition(name, part.index)
                if ctx.broker.logs.find_log(tp) is not None:
                    found.append((tp, header))
    return found


def _open_in_log(ctx: RequestContext) -> Callable[[TopicPartition, RecordBatchHeader], bool]:
    """Kafka's UnifiedLog.hasOngoingTransaction: a partition whose log already holds the
    producer's transaction under this epoch needs no word with the coordinator."""
    def open_in_log(tp: TopicPartition, header: RecordBatchHeader) -> bool:
        plog = ctx.broker.logs.find_log(tp)
        return plog is not None and plog.has_open_transaction(header.producer_id, header.producer_epoch)
    return open_in_log


def _add_retry(ctx: RequestContext) -> AddRetry:
    config, coordinator = ctx.broker.config, ctx.broker.txn_coordinator
    return AddRetry(backoff_ms=config.add_partitions_to_txn_retry_backoff_ms,
                    max_ms=min(config.add_partitions_to_txn_retry_backoff_max_ms, config.request_timeout_ms),
                    wait=None if coordinator is None else coordinator.markers_written)


@dataclass(slots=True)
class _Durable:
    """A partition's batch sequenced in its log (offsets given, producer state checked), answered
    once the log says it is durable: cluster mode's flush and commit, a due local flush."""

    index: int
    reply: asyncio.Future[LogAppendInfo]
    size: int
    stats: TopicStats | None


Outcome = ProducePartitionResponse | _Durable


async def _sequence_one(ctx: RequestContext, request: ProduceRequest, topic: str | None, part: PartitionProduceData,
                        parsed: Parsed, refused: dict[TopicPartition, KafkaError], forbidden: frozenset[str],
                        ) -> Outcome:
    stats = None
    try:
        if topic is None:
            raise KafkaError(ErrorCode.unknown_topic_id, "This server does not host this topic ID.")
        if topic in forbidden:
            raise denied(ctx, AclOperation.WRITE, ResourceType.TOPIC, topic)
        tp = TopicPartition(topic, part.index)
        if refused and (error := refused.get(tp)) is not None:
            raise error
        if topic in INTERNAL_TOPICS:
            raise KafkaError(ErrorCode.invalid_topic_exception, f"cannot append to internal topic {topic}")
        check_leader(ctx.broker.cluster, tp)
        plog = ctx.broker.logs.get_log(tp)
        if (metrics := ctx.broker.metrics) is not None:
            stats = metrics.topic(topic)  # only topics that exist: unknown names make no series
            stats.total_produce_requests += 1
        header = _batch_of(parsed)
        if ctx.version < 12:  # v12+: added to the transaction before (refused holds the failures)
            verify_transactional_batches(ctx.broker.txn_coordinator, request.transactional_id, tp, plog,
                                         header, ctx.version)
            if (remote := remote_verifier(ctx, request.transactional_id)) is not None:
                await verify_remotely(remote, request.transactional_id, tp, plog, header, ctx.version)
        else:
            await check_first_sequence_v2(plog, tp, header)
        assert part.records is not None  # _batch_of refused null records
        appended = plog.submit(part.records)
    except KafkaError as exc:
        return _failed(ctx, topic, part.index, exc, stats)
    if isinstance(appended, LogAppendInfo):
        return _appended(part.index, appended, len(part.records), stats)
    return _Durable(part.index, appended, len(part.records), stats)


def _appended(index: int, info: LogAppendInfo, size: int, stats: TopicStats | None) -> ProducePartitionResponse:
    if stats is not None and not info.duplicate:
        stats.bytes_in += size
        stats.messages_in += info.last_offset - info.base_offset + 1
    return {"index": index, "error_code": ErrorCode.none, "base_offset": info.base_offset,
            "log_append_time": info.log_append_time, "log_start_offset": info.log_start_offset}


def _failed(ctx: RequestContext, topic: str | None, index: int, exc: KafkaError,
            stats: TopicStats | None) -> ProducePartitionResponse:
    log.debug("produce to %s-%d from %s failed: %r", topic, index, ctx.peer, exc)
    if stats is not None:
        stats.failed_produce_requests += 1
    return _error(index, exc.code, exc.message, getattr(exc, "record_errors", []))


def _settled(ctx: RequestContext, topic: str | None, durable: _Durable) -> ProducePartitionResponse:
    """A durable wait's outcome as the partition's answer."""
    reply = durable.reply
    exc = KafkaError(ErrorCode.not_leader_or_follower, "the append was dropped") if reply.cancelled() \
        else reply.exception()
    if exc is None:
        return _appended(durable.index, reply.result(), durable.size, durable.stats)
    if isinstance(exc, KafkaError):
        return _failed(ctx, topic, durable.index, exc, durable.stats)
    log.error("produce to %s-%d from %s failed", topic, durable.index, ctx.peer, exc_info=exc)
    return _error(durable.index, ErrorCode.unknown_server_error)


async def _sequence_all(calls: list[list[Coroutine[object, None, Outcome]]]) -> list[list[Outcome]]:
    """Each topic's partition outcomes, the partitions sequenced concurrently. A request for one
    partition (what most producers send) is awaited directly: gather would wrap it in a task and
    cost two more turns of the event loop per request."""
    if len(calls) == 1 and len(calls[0]) == 1:
        return [[await calls[0][0]]]
    return list(await asyncio.gather(*(asyncio.gather(*topic) for topic in calls)))


def _refused_topics(ctx: RequestContext, request: ProduceRequest, names: list[str | None]) -> frozenset[str]:
    """Kafka's order: WRITE on the transactional id fails the whole request; WRITE on each topic
    fails that topic's partitions (before any check of whether it exists; v13 names topics by id)."""
    if ctx.broker.authorizer is None:
        return NOTHING  # before any enum lookup: each costs ~0.5 us on Python 3.11, per request
    if request.transactional_id is not None:
        require(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    return unauthorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, (name for name in names if name is not None))


async def handle(ctx: RequestContext, request: ProduceRequest) -> object:
    """Sequences the request's batches in their logs, in the order requests come (the connection
    dispatches its next request only after this returns); the answer comes once they are durable:
    now, or as a Later the connection answers in request order (pipelining)."""
    names: list[str | None] = []
    if request.acks not in (0, 1, -1):
        outcomes: list[list[Outcome]] = [
            [_error(p.index, ErrorCode.invalid_required_acks, f"acks={request.acks} is not 0, 1 or -1")
             for p in t.partition_data] for t in request.topic_data]
    else:
        names = [_topic_name(ctx, t) for t in request.topic_data]
        forbidden = _refused_topics(ctx, request, names)
        parsed = [[_parse(p.records, ctx.version) for p in t.partition_data] for t in request.topic_data]
        refused: dict[TopicPartition, KafkaError] = {}
        if ctx.version >= 12 and (batches := _transactional_batches(ctx, request, names, parsed, forbidden)):
            refused = await add_partitions_for_produce(ctx.broker.txn_coordinator, request.transactional_id, batches,
                                                       coordinator_add(ctx), _add_retry(ctx), _open_in_log(ctx))
        outcomes = await _sequence_all([[_sequence_one(ctx, request, name, p, h, refused, forbidden)
                                         for p, h in zip(t.partition_data, hs, strict=True)]
                                        for name, t, hs in zip(names, request.topic_data, parsed, strict=True)])
    _throttle(ctx, request)
    for parts in outcomes:
        for p in parts:
            if type(p) is _Durable:
                return _later(ctx, request, names, outcomes)
    return _answer(ctx, request, outcomes)  # type: ignore[arg-type]  # no _Durable left


def _answer(ctx: RequestContext, request: ProduceRequest, results: list[list[ProducePartitionResponse]]) -> object:
    if request.acks == 0:
        failed = [p for parts in results for p in parts if p["error_code"] != ErrorCode.none]
        if failed:
            # As Kafka does: with no response to carry the error, closing the connection makes
            # the client refresh its metadata and notice.
            raise CloseConnection(failed[0]["error_code"], f"acks=0 produce failed: {failed[0]['error_message']}")
        return NO_RESPONSE
    return _response(ctx, request, results)


def _later(ctx: RequestContext, request: ProduceRequest, names: list[str | None],
           outcomes: list[list[Outcome]]) -> Later:
    """The answer once every sequenced batch is durable (or failed): None for acks=0, or
    CloseConnection when acks=0 has a failure to tell."""
    answer: Later = asyncio.get_running_loop().create_future()
    waiting = [p for parts in outcomes for p in parts if type(p) is _Durable]
    left = len(waiting)

    def one_done(_: object) -> None:
        nonlocal left
        left -= 1
        if left:
            return
        results = [[_settled(ctx, name, p) if isinstance(p, _Durable) else p for p in parts]
                   for name, parts in zip(names, outcomes, strict=True)]
        try:
            response = _answer(ctx, request, results)
        except Exception as exc:  # CloseConnection (acks=0), or a failure to encode: the connection closes
            answer.set_exception(exc)
            return
        answer.set_result(None if response is NO_RESPONSE else response)  # type: ignore[arg-type]

    for p in waiting:
        p.reply.add_done_callback(one_done)
    return answer


def _throttle(ctx: RequestContext, request: ProduceRequest) -> None:
    """producer_byte_rate (broker/quotas): the request's record bytes count against the client's
    quota, and a client over it is throttled (the response says for how long)."""
    quotas = ctx.broker.quotas
    if quotas is None or not quotas.produce.bounds:
        return
    size = sum(len(p.records) for t in request.topic_data for p in t.partition_data if p.records is not None)
    ctx.throttle_ms = quotas.produce.record(ctx.session.principal.name, ctx.header.client_id or "", size, now_ms())


def _response(ctx: RequestContext, request: ProduceRequest, results: list[list[ProducePartitionResponse]],
              discover: bool = True) -> bytes:
    failed = discover and ctx.version >= 10 and any(p["error_code"] for parts in results for p in parts)
    endpoints = _leader_discovery(ctx, request, results) if failed else ()
    return encode_produce_response(ctx.header.correlation_id, ctx.version, [
        {"name": t.name, "topic_id": t.topic_id, "partition_responses": parts}
        for t, parts in zip(request.topic_data, results, strict=True)
    ], ctx.throttle_ms, endpoints)


def _leader_discovery(ctx: RequestContext, request: ProduceRequest, results: list[list[ProducePartitionResponse]],
                      ) -> list[NodeEndpoint]:
    """KIP-951 (v10+): each partition refused for leadership gets current_leader; the addresses
    of those leaders, for the response. A rare path: nothing is looked up while all succeed."""
    leaders = []
    for t, parts in zip(request.topic_data, results, strict=True):
        for p in parts:
            if p["error_code"] in LEADER_ERRORS and (name := _topic_name(ctx, t)) is not None:
                p["current_leader"] = leader = current_leader(ctx, TopicPartition(name, p["index"]))
                leaders.append(leader[0])
    return leader_endpoints(ctx, (n for n in leaders if n >= 0))


def answer_error(ctx: RequestContext, request: ProduceRequest, code: ErrorCode, message: str | None) -> bytes:
    """Kafka's ProduceRequest.getErrorResponse: every partition fails with the error; with acks=0
    there is no response to carry it, so the connection closes."""
    if request.acks == 0:
        raise CloseConnection(code, message)
    # As Kafka's getErrorResponse: no leader named (the broker may be in no state to say).
    return _response(ctx, request, [[_error(p.index, code, message) for p in t.partition_data]
                                    for t in request.topic_data], discover=False)


HANDLER = Handler(api_key=ApiKey.PRODUCE, min_version=0, max_version=13, parse_min_version=3, handle=handle,
                  answer_error=answer_error)
