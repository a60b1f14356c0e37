"""The inter-broker client when the other broker is not there or does not answer: a retriable
Kafka error each time, never a hang, and the next request goes to where the broker is now."""

from __future__ import annotations

import asyncio
import socket

import pytest

from broker.inter_broker import InterBrokerClient
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
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
