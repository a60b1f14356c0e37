"""The metrics endpoint (metrics.port): /metrics for Prometheus, /healthz and /readyz for
orchestrators, over HTTP/1.1 with one request per connection.

It runs on the broker's own event loop rather than in prometheus_client's thread: the collector
then reads coordinator and log state between their awaits (no locks, no torn reads), and the
produce path shares the GIL with nothing but the scrape itself, which is rare and short. Bodies
are small, so a scrape is one write.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

__all__ = ("MetricsServer",)

log = logging.getLogger(__name__)
_REQUEST_TIMEOUT_S: Final = 10.0
_MAX_HEAD: Final = 8192
_TEXT: Final = "text/plain; charset=utf-8"
_REASONS: Final = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                   500: "Internal Server Error", 503: "Service Unavailable"}


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, ready: Callable[[], bool]) -> None:
        self._registry = registry
        self._ready = ready
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()

    async def start(self, sock: socket.socket) -> None:
        self._server = await asyncio.start_server(self._client, sock=sock, limit=_MAX_HEAD)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._clients):
            task.cancel()
        await asyncio.gather(*self._clients, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _REQUEST_TIMEOUT_S)
            writer.write(self._respond(head))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass  # a scraper that went away or sent no request: nothing to answer
        finally:
            self._clients.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass

    def _respond(self, head: bytes) -> bytes:
        parts = head.split(b"\r\n", 1)[0].split()
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            return _response(400, _TEXT, b"bad request line\n")
        method, target = parts[0].decode("latin-1"), parts[1].decode("latin-1")
        if method not in ("GET", "HEAD"):
            return _response(405, _TEXT, b"GET or HEAD only\n")
        status, content_type, body = self._route(target.split("?", 1)[0])
        return _response(status, content_type, b"" if method == "HEAD" else body, len(body))

    def _route(self, path: str) -> tuple[int, str, bytes]:
        if path == "/metrics":
            try:
                return 200, CONTENT_TYPE_LATEST, generate_latest(self._registry)
            except Exception:
                log.exception("metrics scrape failed")
                return 500, _TEXT, b"scrape failed; see the broker's log\n"
        if path == "/healthz":
            return 200, _TEXT, b"ok\n"
        if path == "/readyz":
            if self._ready():
                return 200, _TEXT, b"ready\n"
            return 503, _TEXT, b"starting: logs or coordinators are still loading\n"
        return 404, _TEXT, b"not found: try /metrics, /healthz or /readyz\n"


def _response(status: int, content_type: str, body: bytes, length: int | None = None) -> bytes:
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + body
