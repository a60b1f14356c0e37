"""Pipelined Produce requests on one connection (broker/connection/answers.py), in memory: each is
sequenced in its partition's log as soon as it is read while the ones before it wait to be
durable, and the answers leave in request order. The logs are real local logs whose appends are
made "durable" only when the test says (HeldLog), as cluster mode's are after their flush commits.
The same over a real cluster: tests/e2e/objects/test_pipelined_produce.py."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from broker.connection.answers import MAX_PIPELINED
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from storage.api import AppendOrigin, LogAppendInfo, PartitionLog, TopicPartition
from tests.broker.connection.fake_transport import FakeTransport, until
from tests.broker.connection.test_connection import connect, correlation_ids, request, send, versions

MakeState = Callable[..., Any]
PRODUCER = 4000


class HeldLog:
    """A partition log whose appends are sequenced at once by the real log, and acknowledged
    only when the test releases them (in any order)."""

    def __init__(self, inner: PartitionLog) -> None:
        self.inner = inner
        self.held: list[tuple[asyncio.Future[LogAppendInfo], LogAppendInfo]] = []

    def submit(self, records: bytes | memoryview,
               origin: AppendOrigin = AppendOrigin.CLIENT) -> asyncio.Future[LogAppendInfo]:
        appended = self.inner.submit(records, origin)
        assert isinstance(appended, LogAppendInfo), "a local log idle between requests writes at once"
        durable: asyncio.Future[LogAppendInfo] = asyncio.get_running_loop().create_future()
        self.held.append((durable, appended))
        return durable

    def release(self, i: int, error: KafkaError | None = None) -> None:
        durable, info = self.held[i]
        durable.set_exception(error) if error is not None else durable.set_result(info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def hold(state: BrokerState, topic: str, partitions: int) -> list[HeldLog]:
    """Every partition of topic served by a HeldLog."""
    logs = state.logs
    held = {TopicPartition(topic, p): HeldLog(logs.get_log(TopicPartition(topic, p))) for p in range(partitions)}
    real_get_log = logs.get_log
    logs.get_log = lambda tp: held.get(tp) or real_get_log(tp)  # type: ignore[method-assign]
    return list(held.values())


def produce(correlation_id: int, partition: int, sequence: int, acks: int = -1, topic: str = "t") -> bytes:
    batch = build_batch([Record(value=b"v%d" % sequence)], producer_id=PRODUCER, producer_epoch=0,
                        base_sequence=sequence)
    return request(ApiKey.PRODUCE, 9, correlation_id, transactional_id=None, acks=acks, timeout=5000,
                   topic_data=[{"name": topic, "partition_data": [{"index": partition, "records": bytes(batch)}]}])


def answer_of(transport: FakeTransport, i: int) -> tuple[int, int]:
    """(error code, base offset) of the i-th answer's one partition."""
    p = transport.response(i, ApiKey.PRODUCE, 9).responses[0].partition_responses[0]
    return p.error_code, p.base_offset


async def turns(n: int = 50) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_produces_are_sequenced_while_the_ones_before_wait_and_answered_in_order(
        broker_state: MakeState) -> None:
    state = await broker_state(t=2)
    p0, p1 = hold(state, "t", 2)
    conn, transport = connect(state)
    send(conn, produce(1, 0, 0) + produce(2, 1, 0) + produce(3, 0, 1))
    await until(lambda: len(p0.held) == 2 and len(p1.held) == 1, "all three sequenced, none durable")
    assert [info.base_offset for _, info in p0.held] == [0, 1] and p1.held[0][1].base_offset == 0
    assert p0.inner.log_end_offset == 2
    p1.release(0)  # the second is durable first: its answer waits for the first's
    await turns()
    assert transport.frames() == []
    p0.release(0)
    await until(lambda: len(transport.frames()) == 2, "the first two answers")
    p0.release(1)
    await until(lambda: len(transport.frames()) == 3, "the third answer")
    assert correlation_ids(transport) == [1, 2, 3]
    assert [answer_of(transport, i) for i in range(3)] == [(ErrorCode.none, 0), (ErrorCode.none, 0),
                                                            (ErrorCode.none, 1)]
    assert conn.answers.waiting == 0 and not transport.closed


async def test_another_request_behind_a_produce_waits_until_it_is_answered(broker_state: MakeState) -> None:
    state = await broker_state(t=1)
    (p0,) = hold(state, "t", 1)
    conn, transport = connect(state)
    send(conn, produce(1, 0, 0) + versions(2) + produce(3, 0, 1))
    await until(lambda: len(p0.held) == 1, "the first produce sequenced")
    await turns()
    # ApiVersions waits, taken but not handled, and the produce behind it is not sequenced.
    assert transport.frames() == [] and len(conn.reader.frames) == 1 and len(p0.held) == 1
    p0.release(0)
    await until(lambda: len(p0.held) == 2, "the second produce sequenced once the first was answered")
    p0.release(1)
    await until(lambda: len(transport.frames()) == 3, "three answers")
    assert correlation_ids(transport) == [1, 2, 3]


async def test_the_pipeline_is_bounded(broker_state: MakeState) -> None:
    state = await broker_state(t=1)
    (p0,) = hold(state, "t", 1)
    conn, transport = connect(state)
    count = MAX_PIPELINED + 3
    send(conn, b"".join(produce(i + 1, 0, i) for i in range(count)))
    await until(lambda: len(p0.held) == MAX_PIPELINED, "a full pipeline")
    await turns()
    assert len(p0.held) == MAX_PIPELINED  # no more is sequenced until an answer leaves
    p0.release(0)
    await until(lambda: len(p0.held) == MAX_PIPELINED + 1, "room for one more")
    while len(transport.frames()) < count:
        for i in range(len(p0.held)):
            if not p0.held[i][0].done():
                p0.release(i)
        await asyncio.sleep(0)
    assert correlation_ids(transport) == list(range(1, count + 1))
    assert [answer_of(transport, i)[1] for i in range(count)] == list(range(count))


async def test_a_failure_is_answered_in_its_place_and_the_others_go_on(broker_state: MakeState) -> None:
    """The log decides what follows a failed append (a cluster log re-reads its state, and the
    batch after a lost one is OUT_OF_ORDER_SEQUENCE_NUMBER there); the connection only keeps
    every answer in its place."""
    state = await broker_state(t=2)
    p0, p1 = hold(state, "t", 2)
    conn, transport = connect(state)
    send(conn, produce(1, 0, 0) + produce(2, 1, 0) + produce(3, 0, 1))
    await until(lambda: len(p0.held) == 2 and len(p1.held) == 1, "all three sequenced")
    p1.release(0)
    p0.release(1)
    p0.release(0, KafkaError(ErrorCode.kafka_storage_error, "the flush failed"))
    await until(lambda: len(transport.frames()) == 3, "three answers")
    assert correlation_ids(transport) == [1, 2, 3]
    assert [answer_of(transport, i)[0] for i in range(3)] == [ErrorCode.kafka_storage_error, ErrorCode.none,
                                                               ErrorCode.none]
    assert not transport.closed


async def test_acks_0_has_no_answer_in_the_pipeline_and_its_failure_closes_after_the_answers_before(
        broker_state: MakeState, caplog: pytest.LogCaptureFixture) -> None:
    state = await broker_state(t=1)
    (p0,) = hold(state, "t", 1)
    conn, transport = connect(state)
    send(conn, produce(1, 0, 0, acks=0) + produce(2, 0, 1) + produce(3, 0, 2, acks=0) + produce(4, 0, 3))
    await until(lambda: len(p0.held) == 4, "all four sequenced")
    p0.release(0)
    p0.release(1)
    await until(lambda: len(transport.frames()) == 1, "the acks=1 answer")
    assert correlation_ids(transport) == [2]
    with caplog.at_level(logging.WARNING, logger="broker.connection"):
        p0.release(2, KafkaError(ErrorCode.kafka_storage_error, "the flush failed"))
        await turns()
        assert not transport.closed  # the answer of the request after it comes first
        p0.release(3)
        await until(lambda: transport.closed, "the close")
    assert correlation_ids(transport) == [2, 4]
    assert any("acks=0 produce failed" in r.getMessage() for r in caplog.records)


async def test_a_connection_lost_mid_pipeline_drops_the_answers_not_the_appends(broker_state: MakeState) -> None:
    state = await broker_state(t=1)
    (p0,) = hold(state, "t", 1)
    conn, transport = connect(state)
    send(conn, produce(1, 0, 0) + produce(2, 0, 1) + produce(3, 0, 2))
    await until(lambda: len(p0.held) == 3, "all three sequenced")
    p0.release(0)
    await until(lambda: len(transport.frames()) == 1, "the first answer")
    transport.close()  # the peer went: connection_lost on the next turn
    await until(lambda: conn.answers.lost, "the loss seen")
    p0.release(1)
    p0.release(2, KafkaError(ErrorCode.kafka_storage_error, "the flush failed"))
    await turns()
    assert correlation_ids(transport) == [1]  # FakeTransport also fails a write after close
    assert p0.inner.log_end_offset == 3


async def test_a_bad_request_behind_pending_produces_closes_once_they_are_answered(
        broker_state: MakeState, caplog: pytest.LogCaptureFixture) -> None:
    state = await broker_state(t=1)
    (p0,) = hold(state, "t", 1)
    conn, transport = connect(state)
    bad = produce(3, 0, 2)[:-12]  # a Produce frame cut short: not parsable
    bad = len(bad[4:]).to_bytes(4, "big") + bad[4:]
    with caplog.at_level(logging.WARNING, logger="broker.connection"):
        send(conn, produce(1, 0, 0) + produce(2, 0, 1) + bad)
        await until(lambda: conn.reader.closing, "the bad request seen")
    assert not transport.closed and not transport.reading
    p0.release(1)
    p0.release(0)
    await until(lambda: transport.closed, "the close after the answers")
    assert correlation_ids(transport) == [1, 2]
    assert [answer_of(transport, i) for i in range(2)] == [(ErrorCode.none, 0), (ErrorCode.none, 1)]


async def test_a_local_log_answers_at_once_with_nothing_pipelined(broker_state: MakeState) -> None:
    state = await broker_state(t=1)
    conn, transport = connect(state)
    send(conn, produce(1, 0, 0) + produce(2, 0, 1))
    await until(lambda: len(transport.frames()) == 2, "two answers")
    assert [answer_of(transport, i) for i in range(2)] == [(ErrorCode.none, 0), (ErrorCode.none, 1)]
    assert conn.answers.waiting == 0
