"""A TLS client accepted before the broker began to shut down, whose handshake is not done: the
broker drops it at once, rather than waiting for it or leaving it open (unclosed at loop close)."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from pathlib import Path

import pytest

from broker.config import build_config
from broker.server import Broker
from tests.tls_certs import TlsFiles


def _handshake_then_read(sock: socket.socket, context: ssl.SSLContext) -> bytes:
    sock.settimeout(10)
    try:
        with context.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            return tls.recv(1)  # b"": the broker closed the connection
    except (ConnectionError, ssl.SSLError):
        return b""


async def test_a_handshake_that_ends_after_stop_began_is_dropped(tmp_path: Path, tls_files: TlsFiles,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    props = {"listeners": "SSL://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
             "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
             } | tls_files.broker_settings(client_auth="none")
    config, _ = build_config(props)
    broker = Broker(config)
    await broker.start()
    port = broker.config.client_listeners[0].port
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        await asyncio.sleep(0.2)  # accepted: the broker's TLS layer waits for the ClientHello
        await broker.stop()
        # neither "connections did not close within 5 s" nor a failed handshake
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        context = ssl.create_default_context(cafile=str(tls_files.ca))
        assert await asyncio.to_thread(_handshake_then_read, sock, context) == b""
        assert not broker.connections
    finally:
        sock.close()
