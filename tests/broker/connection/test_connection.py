"""The whole connection (broker/connection/protocol.py) over a fake transport and a real
BrokerState: requests in as bytes however they are split, answers out in request order, reads
muted by back-pressure and by a quota's throttle, and a SASL listener's gate closing the
connection. The same behaviour over sockets: tests/e2e/test_pipelining.py, test_security.py,
test_client_quotas.py."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker.connection import KafkaConnection
from broker.memory_pool import MemoryPool
from broker.quotas.entities import CLIENT_ID
from broker.quotas.manager import ClientQuotas
from broker.security.listener_security import ListenerSecurity
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.broker_config_store import FileBrokerConfigStore
from tests.broker.connection.fake_transport import FakeTransport, feed, until
from tests.broker.connection.sasl_listener import listener, plain_token, sasl_security
from tests.kafka_wire import encode_request, frame

MakeState = Callable[..., Any]


def request(api_key: ApiKey, version: int, correlation_id: int, client_id: str = "test", **fields: Any) -> bytes:
    return frame(encode_request(build(request_schema(api_key, version), fields), correlation_id, client_id))


def versions(correlation_id: int) -> bytes:
    return request(ApiKey.API_VERSIONS, 3, correlation_id, client_software_name="t", client_software_version="1")


def metadata(correlation_id: int) -> bytes:
    return request(ApiKey.METADATA, 12, correlation_id, topics=None, allow_auto_topic_creation=False,
                   include_topic_authorized_operations=False)


def connect(state: BrokerState, security: ListenerSecurity | None = None,
            clock: Callable[[], float] | None = None) -> tuple[KafkaConnection, FakeTransport]:
    security = security or ListenerSecurity(listener=listener("PLAIN", "PLAINTEXT"))
    conn = KafkaConnection(state, set(), MemoryPool(-1), security, *([clock] if clock else []))
    transport = FakeTransport(conn)
    conn.connection_made(transport)
    return conn, transport


def send(conn: KafkaConnection, data: bytes, chunk: int = 1 << 16) -> None:
    feed(conn.get_buffer, conn.buffer_updated, data, chunk)


def correlation_ids(transport: FakeTransport) -> list[int]:
    return [int.from_bytes(f[:4], "big") for f in transport.frames()]


async def test_pipelined_requests_are_answered_in_order(broker_state: MakeState) -> None:
    conn, transport = connect(await broker_state(t=2))
    requests = versions(1) + metadata(2) + versions(3) + metadata(4) + versions(5)
    send(conn, requests, chunk=13)  # every request split across reads
    await until(lambda: len(transport.frames()) == 5, "five answers")
    assert correlation_ids(transport) == [1, 2, 3, 4, 5]
    assert transport.writes < 5  # the small answers left together
    assert [t.name for t in transport.response(1, ApiKey.METADATA, 12).topics] == ["t"]
    assert not transport.closed


async def test_answers_wait_while_the_transport_is_over_its_high_water_mark(broker_state: MakeState) -> None:
    conn, transport = connect(await broker_state())
    conn.pause_writing()
    send(conn, versions(1) + versions(2))
    await until(lambda: len(transport.frames()) == 1, "the first answer")
    for _ in range(50):  # the loop turns, the second answer does not come
        await until(lambda: True, "a turn")
    assert correlation_ids(transport) == [1]
    conn.resume_writing()
    await until(lambda: len(transport.frames()) == 2, "the second answer after resume_writing")
    assert correlation_ids(transport) == [1, 2]


async def test_an_unparsable_request_closes_after_the_answers_before_it(broker_state: MakeState,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    conn, transport = connect(await broker_state())
    with caplog.at_level(logging.WARNING, logger="broker.connection"):
        send(conn, versions(1) + frame(b"\x00\x12\x00\x03\x00\x00\x00\x02"))  # header cut short
        await until(lambda: transport.closed, "the close")
    assert correlation_ids(transport) == [1]
    assert any("closing connection from 127.0.0.1:5555: cannot parse request" in r.getMessage()
               for r in caplog.records)


async def test_a_request_before_sasl_completes_closes_the_connection(broker_state: MakeState,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    conn, transport = connect(await broker_state(), sasl_security())
    with caplog.at_level(logging.WARNING, logger="broker.connection"):
        send(conn, versions(1) + metadata(2))
        await until(lambda: transport.closed, "the close")
    assert correlation_ids(transport) == [1]  # ApiVersions may come first; Metadata may not
    assert any("METADATA request on SASL listener CLIENT before authentication" in r.getMessage()
               for r in caplog.records)


async def login(conn: KafkaConnection, transport: FakeTransport) -> None:
    send(conn, request(ApiKey.SASL_HANDSHAKE, 1, 1, mechanism="PLAIN")
         + request(ApiKey.SASL_AUTHENTICATE, 2, 2, auth_bytes=plain_token()))
    await until(lambda: len(transport.frames()) == 2, "the SASL answers")
    answer = transport.response(1, ApiKey.SASL_AUTHENTICATE, 2)
    assert answer.error_code == ErrorCode.none, answer


async def test_an_expired_session_closes_at_the_next_request(broker_state: MakeState,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # The session's expiry is set in time.monotonic's seconds (broker/security/sasl.py): a clock
    # fixed at 5,000 s had it expired at once on a machine up for less than ~83 minutes.
    now = [time.monotonic()]
    conn, transport = connect(await broker_state(), sasl_security(reauth_ms=30_000), lambda: now[0])
    await login(conn, transport)
    assert str(conn.session.principal) == "User:alice"
    send(conn, metadata(3))
    await until(lambda: len(transport.frames()) == 3, "the answer within the session")
    sasl = conn.gate.sasl
    assert sasl is not None and sasl.session_expires is not None
    now[0] = sasl.session_expires + 1
    assert not transport.closed  # nothing closes it until it sends again
    with caplog.at_level(logging.WARNING, logger="broker.connection"):
        send(conn, metadata(4))
        await until(lambda: transport.closed, "the close")
    assert correlation_ids(transport) == [1, 2, 3]
    assert any("METADATA request after the SASL session of User:alice expired" in r.getMessage()
               for r in caplog.records)


async def test_a_throttled_client_is_not_read_until_its_throttle_time_has_passed(
        broker_state: MakeState, tmp_path: Path) -> None:
    state = await broker_state(t=1)
    (tmp_path / "quotas").mkdir()
    state.quotas = quotas = ClientQuotas(FileBrokerConfigStore(tmp_path / "quotas"), samples=2, window_ms=100)
    await quotas.alter({((CLIENT_ID, "slow"),): lambda before: {"producer_byte_rate": 10_000.0}}, validate_only=False)
    conn, transport = connect(state)
    batch = bytes(build_batch([Record(value=b"v" * 4000)]))
    produce = request(ApiKey.PRODUCE, 9, 1, client_id="slow", transactional_id=None, acks=1, timeout=5000,
                      topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": batch}]}])
    send(conn, produce)
    await until(lambda: len(transport.frames()) == 1, "the produce answer")
    answer = transport.response(0, ApiKey.PRODUCE, 9)
    assert answer.throttle_time.total_seconds() > 0
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
    # KIP-219: the answer is out at once, and the connection is muted for its throttle time.
    await until(lambda: not transport.reading, "reads paused")
    assert conn.reader.paused_for == {"quota"}
    await until(lambda: transport.reading, "reads resumed after the throttle time")
    assert not conn.reader.paused_for
    send(conn, versions(2))
    await until(lambda: len(transport.frames()) == 2, "the next answer")
    assert not transport.closed
