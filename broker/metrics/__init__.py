"""Prometheus metrics: counters kept on the request path (counters.py), series computed at
scrape time (collector.py), and the HTTP endpoint of metrics.port (http.py), wired here."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol

from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.registry import CollectorRegistry

from ..startup import StartupError, bind_listener
from .collector import BrokerCollector
from .counters import BrokerMetrics
from .http import MetricsServer

if TYPE_CHECKING:
    from ..principal import Session
    from ..state import BrokerState

__all__ = ("BrokerMetrics", "MetricsEndpoint")

log = logging.getLogger("broker")
_BACKLOG = 64


class _Connection(Protocol):
    @property
    def session(self) -> Session: ...


def connections_per_listener(state: BrokerState, connections: Collection[_Connection]) -> dict[tuple[str, str], int]:
    """Open connections by (listener name, security protocol), every client listener included."""
    counts = {(listener.name, listener.security_protocol): 0 for listener in state.config.client_listeners}
    for connection in connections:
        key = (connection.session.listener_name, connection.session.security_protocol)
        counts[key] = counts.get(key, 0) + 1
    return counts


class MetricsEndpoint:
    """The endpoint of metrics.port / metrics.host: bound with the Kafka listener (so a port in
    use fails start-up before the data dir is touched), serving from before the coordinators load
    (/readyz answers 503 until `ready` says otherwise)."""

    def __init__(self, state: BrokerState, connections: Collection[_Connection], ready: Callable[[], bool]) -> None:
        self.metrics = BrokerMetrics()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(state, self.metrics,
                                               lambda: connections_per_listener(state, connections)))
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
