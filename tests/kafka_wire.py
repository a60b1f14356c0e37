"""Requests and responses encoded by kio's own writer and reader, independent of protocol/codec.py:
the other end of our codec in protocol tests, and a raw client for wire-level e2e tests."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from broker.embedded import recv_exact
from protocol.newer_schemas import NEWER_RESPONSES


def encode_request(entity: Any, correlation_id: int, client_id: str | None = "test") -> bytes:
    """Header (v1 or v2, as the schema says) + body, without the size prefix."""
    header_type = entity.__header_schema__
    header = header_type(request_api_key=entity.__api_key__, request_api_version=entity.__version__,
                         correlation_id=correlation_id, client_id=client_id)
    buf = io.BytesIO()
    entity_writer(header_type)(buf, header)
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def decode_response(payload: bytes, api_key: int, version: int) -> tuple[Any, Any]:
    """(response header, body) of a response payload (without its size prefix)."""
    schema = NEWER_RESPONSES.get((api_key, version)) or load_response_schema(api_key, version)
    # kio's readers return (entity, bytes consumed).
    header, header_size = entity_reader(schema.__header_schema__)(payload, 0)
    body, body_size = entity_reader(schema)(payload, header_size)
    trailing = len(payload) - header_size - body_size
    assert trailing == 0, f"{trailing} trailing bytes after the response"
    return header, body


def recv_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, size)


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the peer closed the connection (EOF or reset) before sending anything more."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


class RawClient:
    """One blocking TCP connection speaking kio-encoded requests."""

    def __init__(self, bootstrap: str, timeout: float = 15.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation_id = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, entity: Any) -> Any:
        self._correlation_id += 1
        self.sock.sendall(frame(encode_request(entity, self._correlation_id)))
        header, body = decode_response(recv_frame(self.sock), entity.__api_key__, entity.__version__)
        assert header.correlation_id == self._correlation_id
        return body

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
