"""The inter-broker client when the other broker is not there or does not answer: a retriable
Kafka error each time, never a hang, and the next request goes to where the broker is now."""

from __future__ import annotations

import asyncio
import gc
import socket

import pytest
import uvloop

from broker.inter_broker import InterBrokerClient, _Connection
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import encode_response, request_schema, response_schema
from protocol.errors import ErrorCode, KafkaError
from storage.api import BrokerEndpoint

from ..coordinator.cluster_view import StaticClusterView

REQUEST = build(request_schema(ApiKey.DESCRIBE_TRANSACTIONS, 0), {"transactional_ids": ["tx"]})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def expect(code: ErrorCode, coro) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as info:
        await coro
    assert info.value.code is code, info.value


async def test_unknown_refused_and_silent_brokers_are_retriable_errors() -> None:
    silent_connections: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent_connections.append(writer)  # a SIGSTOPped broker: the kernel accepts, nobody answers

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    view = StaticClusterView(1)
    view.brokers = [BrokerEndpoint(2, "127.0.0.1", free_port())]
    client = InterBrokerClient(view, client_id="t", request_timeout_ms=200)
    try:
        await expect(ErrorCode.leader_not_available, client.send(3, REQUEST))
        await expect(ErrorCode.network_exception, client.send(2, REQUEST))
        view.brokers = [BrokerEndpoint(2, "127.0.0.1", server.sockets[0].getsockname()[1])]
        await expect(ErrorCode.request_timed_out, client.send(2, REQUEST))
        assert ErrorCode.request_timed_out.retriable and ErrorCode.network_exception.retriable
        assert len(silent_connections) == 1
    finally:
        await client.close()
        for writer in silent_connections:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_garbled_answer_breaks_the_connection_retriably() -> None:
    async def garble(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(4)
        writer.write(b"\xff\xff\xff\xff")  # a negative frame size
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(garble, "127.0.0.1", 0)
    view = StaticClusterView(1)
    view.brokers = [BrokerEndpoint(2, "127.0.0.1", server.sockets[0].getsockname()[1])]
    client = InterBrokerClient(view, client_id="t", request_timeout_ms=5000)
    try:
        await expect(ErrorCode.network_exception, client.send(2, REQUEST))
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_a_connection_that_opens_after_close_is_closed_and_no_new_one_opens(
        monkeypatch: pytest.MonkeyPatch) -> None:
    accepted: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    opening, release = asyncio.Event(), asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append((reader, writer))

    async def slow_open(self):  # type: ignore[no-untyped-def]
        streams = await real_open(self)
        opening.set()
        await release.wait()  # the client closes while this connection is still being opened
        return streams

    real_open = _Connection._open
    monkeypatch.setattr(_Connection, "_open", slow_open)
    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    view = StaticClusterView(1)
    view.brokers = [BrokerEndpoint(2, "127.0.0.1", server.sockets[0].getsockname()[1])]
    client = InterBrokerClient(view, client_id="t", request_timeout_ms=5000)
    try:
        sending = asyncio.ensure_future(client.send(2, REQUEST))
        await opening.wait()
        await client.close()
        release.set()
        await expect(ErrorCode.network_exception, sending)
        assert await asyncio.wait_for(accepted[0][0].read(), 5) == b""  # closed before any byte went
        await expect(ErrorCode.network_exception, client.send(2, REQUEST))
        assert len(accepted) == 1
    finally:
        for _, writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A peer that logs the client in (ApiVersions: DescribeTransactions v0 only) and answers
    each DescribeTransactions with no transaction."""
    answers = {ApiKey.API_VERSIONS: build(response_schema(ApiKey.API_VERSIONS, 3), {
                   "error_code": ErrorCode.none,
                   "api_keys": [{"api_key": ApiKey.DESCRIBE_TRANSACTIONS, "min_version": 0, "max_version": 0}]}),
               ApiKey.DESCRIBE_TRANSACTIONS: build(response_schema(ApiKey.DESCRIBE_TRANSACTIONS, 0), {})}
    while True:
        size = int.from_bytes(await reader.readexactly(4), "big")
        frame = await reader.readexactly(size)
        api_key, correlation_id = ApiKey(int.from_bytes(frame[:2], "big")), int.from_bytes(frame[4:8], "big")
        writer.write(encode_response(correlation_id, answers[api_key]))


async def _request_after_the_peer_went() -> tuple[ErrorCode, list[dict[str, object]]]:
    unhandled: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: unhandled.append(context))
    peers: list[tuple[asyncio.Task[None], asyncio.StreamWriter]] = []
    server = await asyncio.start_server(lambda r, w: peers.append((asyncio.ensure_future(_answer(r, w)), w)),
                                        "127.0.0.1", 0)
    view = StaticClusterView(1)
    view.brokers = [BrokerEndpoint(2, "127.0.0.1", server.sockets[0].getsockname()[1])]
    client = InterBrokerClient(view, client_id="t", request_timeout_ms=2000)
    try:
        await client.send(2, REQUEST)  # logged in
        connection = client._connections[2]  # the one the next request goes on
        assert connection._writer is not None and not connection.closed
        # The peer's process is killed: its end of the connection is gone and ours is closed by
        # the loop before the connection's reader task has run (uvloop then refuses writes).
        connection._writer.transport.abort()
        with pytest.raises(KafkaError) as info:
            await client.send(2, REQUEST)
        code = info.value.code
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
        for peer, writer in peers:
            peer.cancel()
            writer.close()
        await asyncio.gather(*(peer for peer, _ in peers), return_exceptions=True)
    gc.collect()  # a failed future nobody read is reported when it is collected
    await asyncio.sleep(0)
    return code, unhandled


def test_a_request_on_a_connection_whose_peer_just_went_fails_retriably() -> None:
    """uvloop, as the broker runs: a request sent between its peer's death and the reader task
    noticing it fails as a broken connection (NETWORK_EXCEPTION: the marker writer retries
    it), not with uvloop's RuntimeError, and leaves no failed reply nobody reads ("Future exception
    was never retrieved", an ERROR line)."""
    code, unhandled = uvloop.run(_request_after_the_peer_went())
    assert code is ErrorCode.network_exception
    assert unhandled == []
