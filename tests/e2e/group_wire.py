"""A bare request/response client for sending exactly the group requests a test wants (bad
ones included), encoded with kio the way a client library would."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "wire-test") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, request: Any) -> Any:
        schema = type(request)
        header_type = schema.__header_schema__
        self.correlation_id += 1
        header = header_type(
            request_api_key=schema.__api_key__, request_api_version=schema.__version__,
            correlation_id=self.correlation_id, client_id=self.client_id,
        )
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0")
        entity_writer(header_type)(buf, header)
        entity_writer(schema)(buf, request)
        data = bytearray(buf.getvalue())
        struct.pack_into(">i", data, 0, len(data) - 4)
        self.sock.sendall(data)
        (size,) = struct.unpack(">i", self._read(4))
        frame = self._read(size)
        response_type = load_response_schema(schema.__api_key__, schema.__version__)
        _header, offset = entity_reader(response_type.__header_schema__)(frame, 0)
        body, _ = entity_reader(response_type)(frame, offset)
        return body

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            out += chunk
        return bytes(out)
