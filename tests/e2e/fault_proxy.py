"""A loopback TCP proxy that drops chosen Kafka responses by cutting the connection, or rewrites
frames in flight (faults from outside the broker, as asyncpg's TCPFuzzingProxy). The broker
advertises the proxy's port, so all client traffic flows through it."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

__all__ = ("FaultProxy",)


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    body = _read_exact(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


# rewrite(api_key, is_request, frame) -> the frame to pass on instead (the same length: the size
# prefix is not recomputed).
Rewrite = Callable[[int, bool, bytes], bytes]


class FaultProxy:
    """drop(api_key, n) decides, for the n-th response of that API, whether to cut instead."""

    def __init__(self, drop: Callable[[int, int], bool], rewrite: Rewrite | None = None) -> None:
        self.drop = drop
        self.rewrite = rewrite
        self.target_port = 0
        self.cuts = 0
        self._counts: dict[int, int] = {}
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False

    def start(self, target_port: int) -> None:
        self.target_port = target_port
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            api_keys: dict[int, int] = {}  # correlation id -> api key, of requests in flight
            threading.Thread(target=self._requests, args=(client, server, api_keys), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, api_keys), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, api_keys: dict[int, int]) -> None:
        try:
            while (frame := _read_frame(client)) is not None:
                api_key, _version, correlation_id = struct.unpack_from(">hhi", frame, 4)
                api_keys[correlation_id] = api_key
                if self.rewrite is not None:
                    frame = self.rewrite(api_key, True, frame)
                server.sendall(frame)
        except OSError:
            pass
        self._cut(client, server)

    def _responses(self, server: socket.socket, client: socket.socket, api_keys: dict[int, int]) -> None:
        try:
            while (frame := _read_frame(server)) is not None:
                (correlation_id,) = struct.unpack_from(">i", frame, 4)
                api_key = api_keys.pop(correlation_id, -1)
                with self._lock:
                    n = self._counts[api_key] = self._counts.get(api_key, 0) + 1
                    cut = self.drop(api_key, n)
                    self.cuts += cut
                if cut:  # the broker did the work; the client never hears of it
                    break
                if self.rewrite is not None:
                    frame = self.rewrite(api_key, False, frame)
                client.sendall(frame)
        except OSError:
            pass
        self._cut(client, server)

    @staticmethod
    def _cut(*socks: socket.socket) -> None:
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
