"""Prometheus metrics: counters kept on the request path (counters.py), series computed at
scrape time (collector.py), and the HTTP endpoint of metrics.port (http.py), wired here."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sized
from typing import TYPE_CHECKING

from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.registry import CollectorRegistry

from ..startup import StartupError, bind_listener
from .collector import BrokerCollector
from .counters import BrokerMetrics
from .http import MetricsServer

if TYPE_CHECKING:
    from ..state import BrokerState

__all__ = ("BrokerMetrics", "MetricsEndpoint")

log = logging.getLogger("broker")
_BACKLOG = 64


class MetricsEndpoint:
    """The endpoint of metrics.port / metrics.host: bound with the Kafka listener (so a port in
    use fails start-up before the data dir is touched), serving from before the coordinators load
    (/readyz answers 503 until `ready` says otherwise)."""

    def __init__(self, state: BrokerState, connections: Sized, ready: Callable[[], bool]) -> None:
        self.metrics = BrokerMetrics()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(state, self.metrics, lambda: len(connections)))
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self._server = MetricsServer(self.registry, ready)
        self._sock: socket.socket | None = None
        self.port: int | None = None

    def bind(self, host: str, port: int) -> None:
        try:
            self._sock = bind_listener(host, port, backlog=_BACKLOG)
        except StartupError as exc:
            raise StartupError(f"metrics.port={port}: {exc}") from None
        self.port = self._sock.getsockname()[1]

    def close_socket(self) -> None:
        """Release a bound socket that start() will not serve (start-up failed after bind)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def start(self, host: str) -> None:
        assert self._sock is not None, "bind() first"
        sock, self._sock = self._sock, None
        await self._server.start(sock)
        where = f"[{host}]" if ":" in host else host or "*"
        log.info("metrics endpoint on http://%s:%d/metrics (also /healthz, /readyz)", where, self.port)

    async def stop(self) -> None:
        await self._server.stop()
