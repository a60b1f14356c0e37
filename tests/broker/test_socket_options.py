"""The listening and accepted sockets' options, as Kafka's SocketServer sets them.
socket.send.buffer.bytes is SO_SNDBUF of each accepted connection and socket.receive.buffer.bytes
SO_RCVBUF of the listening socket, which accepted connections inherit; -1 (our default; Kafka's is
102400) keeps the OS's autotuned buffers. They are read back from the broker's side of a real
connection (Linux reports twice the size set, for its bookkeeping). socket.listen.backlog.size is
the listen backlog."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from broker.config import ConfigError, build_config
from tests.broker.conftest import serving
from tests.tls_certs import TlsFiles


def _config(tmp_path: Path, **props: str):  # type: ignore[no-untyped-def]
    config, _ = build_config({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                              "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
                              **props})
    return config


async def _buffers(config, tls: ssl.SSLContext | None = None) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(SO_SNDBUF, SO_RCVBUF) of the broker's end of a fresh client connection."""
    async with serving(config) as broker:
        port = broker.config.client_listeners[0].port
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
        try:
            while not broker.connections:
                await asyncio.sleep(0.01)
            (conn,) = broker.connections
            assert conn.transport is not None
            sock = conn.transport.get_extra_info("socket")
            return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                    sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
        finally:
            writer.close()


async def test_by_default_the_os_sizes_both_buffers(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert (config.socket_send_buffer_bytes, config.socket_receive_buffer_bytes) == (-1, -1)
    untouched = await _buffers(config)
    assert await _buffers(_config(tmp_path, **{"socket.send.buffer.bytes": "102400",
                                               "socket.receive.buffer.bytes": "102400"})) == (204800, 204800)
    assert 204800 not in untouched  # the kernel's own starting sizes (net.ipv4.tcp_wmem / tcp_rmem)


async def test_each_size_is_applied_on_its_own(tmp_path: Path) -> None:
    default_sent, default_received = await _buffers(_config(tmp_path))
    sent, received = await _buffers(_config(tmp_path, **{"socket.send.buffer.bytes": "300000"}))
    assert (sent, received) == (2 * 300000, default_received)
    sent, received = await _buffers(_config(tmp_path, **{"socket.receive.buffer.bytes": "65536"}))
    assert (sent, received) == (default_sent, 2 * 65536)


async def test_a_tls_connection_gets_them_too(tmp_path: Path, tls_files: TlsFiles) -> None:
    props = {"listeners": "SSL://127.0.0.1:0", "socket.send.buffer.bytes": "300000",
             "socket.receive.buffer.bytes": "65536"} | tls_files.broker_settings(client_auth="none")
    config = _config(tmp_path, **props)
    context = ssl.create_default_context(cafile=str(tls_files.ca))
    assert await _buffers(config, context) == (2 * 300000, 2 * 65536)


def _listen_backlog(port: int) -> int:
    """The backlog of the socket listening on port, as `ss` shows it (Send-Q of a LISTEN line)."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    (line,) = out.splitlines()
    return int(line.split()[2])


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss to read a listening socket's backlog")
@pytest.mark.parametrize(("props", "backlog"), [({}, 1024), ({"socket.listen.backlog.size": "50"}, 50)])
async def test_the_listen_backlog_is_configurable(tmp_path: Path, props: dict[str, str], backlog: int) -> None:
    async with serving(_config(tmp_path, **props)) as broker:
        assert await asyncio.to_thread(_listen_backlog, broker.config.client_listeners[0].port) == backlog


def test_a_backlog_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"socket\.listen\.backlog\.size"):
        _config(tmp_path, **{"socket.listen.backlog.size": "0"})


@pytest.mark.parametrize("key", ["socket.send.buffer.bytes", "socket.receive.buffer.bytes"])
@pytest.mark.parametrize("value", ["0", "-2", "big"])
def test_sizes_that_no_socket_takes_are_refused_at_start_up(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _config(tmp_path, **{key: value})
