"""Server lifecycle, in uvicorn's shape: load storage, start services, listen; on stop close the
listener, close connections, stop services, flush and close the logs."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from storage.api import BrokerEndpoint, ScramCredential
from storage.cleaner.log_cleaner import CleanerConfig, CleanerService  # both backends' cleaners
from storage.log_dir_lock import LogDirInUseError, LogDirLock
from storage.meta_properties import MetaPropertiesError, ensure_meta_properties, kafka_uuid

from .authorizer.standard import StandardAuthorizer
from .backend import choose_backend
from .config import BrokerConfig
from .connection import KafkaConnection
from .connection_limits import ConnectionLimits
from .dispatch import HANDLERS
from .dynamic_config import DynamicBrokerConfig
from .memory_pool import MemoryPool
from .metrics import MetricsEndpoint
from .quotas.manager import ClientQuotas
from .security.inter_broker_auth import build_inter_broker_security
from .security.listener_security import ListenerSecurity, build_listener_security, fetch_verification_keys
from .security.tls_acceptor import tls_protocol_factory
from .startup import StartupError, bind_listener, check_data_dir
from .state import BrokerState, endpoint_of

if TYPE_CHECKING:
    from .services import Service

__all__ = ("Broker",)

log = logging.getLogger("broker")


def cleaner_config(config: BrokerConfig) -> CleanerConfig:
    """Kafka's log.cleaner.* settings for either backend's cleaner."""
    return CleanerConfig(threads=config.log_cleaner_threads, backoff_ms=config.log_cleaner_backoff_ms,
                         dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size,
                         dedupe_buffer_load_factor=config.log_cleaner_io_buffer_load_factor,
                         io_buffer_size=config.log_cleaner_io_buffer_size,
                         io_max_bytes_per_second=config.log_cleaner_io_max_bytes_per_second)


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        # The one place the storage backend is chosen (broker/backend.py).
        self.backend = backend = choose_backend(config, self._endpoint)
        self.config = config = backend.config
        self.state = BrokerState(config=config, logs=backend.logs, handlers=HANDLERS, cluster=backend.view,
                                 producer_id_blocks=backend.producer_id_blocks)
        self.connections: set[KafkaConnection] = set()
        self._handshaking: set[asyncio.BaseTransport] = set()  # accepted TLS clients before their handshake
        self.memory_pool = MemoryPool(config.queued_max_request_bytes)
        self._servers: list[asyncio.Server] = []
        self._security: list[ListenerSecurity] = []
        self._tasks: list[asyncio.Task[object]] = []
        self._services: list[Service] = []
        self._lock = LogDirLock(config.data_dir)
        self.port = config.port
        self.stopped = asyncio.Event()
        self.stop_requested = asyncio.Event()  # serve_forever's signal handlers set it
        self.ready = False  # /readyz: logs recovered, coordinators loaded, listener up
        self.metrics_endpoint: MetricsEndpoint | None = None
        self.cleaner: CleanerService | None = None  # built with the dynamic configs at start
        if config.metrics_port is not None:
            self.metrics_endpoint = MetricsEndpoint(self.state, self.connections, lambda: self.ready)
            self.state.metrics = self.metrics_endpoint.metrics

    async def start(self) -> None:
        """Check, bind, lock, then load: every check that can fail runs before anything is created
        on disk, and a port in use leaves no lock or directory behind."""
        check_data_dir(self.config.data_dir)
        socks = self._bind_listeners()
        # The ports bound for port 0, known before anything registers or advertises them.
        bound = {security.listener.name: sock.getsockname()[1] for security, sock in socks}
        self.state.config = self.config = self.config.with_bound_ports(bound)
        metrics = self.metrics_endpoint
        metrics_host = self.config.host if self.config.metrics_host is None else self.config.metrics_host
        try:
            jwks = await fetch_verification_keys(self._security)
            if metrics is not None:
                metrics.bind(metrics_host, self.config.metrics_port or 0)
            await self.backend.connect(self.config)
            self._open_storage()
        except BaseException:
            for _, sock in socks:
                sock.close()
            if metrics is not None:
                metrics.close_socket()
            await self.backend.abandon()
            raise
        if metrics is not None:
            await metrics.start(metrics_host)
        await self._open_dynamic_config()
        await self._start_services()
        await self._serve_listeners(socks)
        self._tasks.append(asyncio.get_running_loop().create_task(self._retention_loop(), name="retention"))
        self._tasks += [asyncio.get_running_loop().create_task(keys.run(), name="jwks") for keys in jwks]
        if self.cleaner is not None:
            self.cleaner.start()
        host, port = self.config.advertised
        log.info("eosbroker listening on %s:%d (advertised as %s:%d), data in %s, node %d of cluster %s",
                 self.config.host or "*", self.port, host, port, self.config.data_dir, self.config.node_id,
                 self.state.cluster_id)
        self.ready = True

    async def _start_services(self) -> None:
        try:
            await self.backend.join()  # leading a first share before the coordinators start
            for service in self._build_services():
                await service.start()
                self._services.append(service)
        except BaseException:
            await self.backend.leave()  # hand back what was taken, end the lease, disconnect
            await self.backend.abandon()
            raise

    def _bind_listeners(self) -> list[tuple[ListenerSecurity, socket.socket]]:
        # Key material is read (once) before any port is bound or anything is created on disk.
        self._security = [build_listener_security(self.config, listener, self._scram_credential)
                          for listener in self.config.client_listeners]
        if self.backend.shared:  # how to reach and log in to the other brokers
            self.state.inter_broker_security = build_inter_broker_security(self.config)
        socks: list[tuple[ListenerSecurity, socket.socket]] = []
        try:
            for security in self._security:
                listener = security.listener
                sock = bind_listener(listener.host, listener.port, backlog=self.config.socket_listen_backlog_size)
                socks.append((security, sock))
                if (size := self.config.socket_receive_buffer_bytes) > 0:  # accepted sockets inherit it
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
        except BaseException:
            for _, sock in socks:
                sock.close()
            raise
        return socks

    async def _serve_listeners(self, socks: list[tuple[ListenerSecurity, socket.socket]]) -> None:
        loop = asyncio.get_running_loop()
        for security, sock in socks:
            server = await loop.create_server(self._protocol_factory(security), sock=sock,
                                              backlog=self.config.socket_listen_backlog_size)
            self._servers.append(server)
        self.port = self.config.port
        for listener in self.config.client_listeners:
            host, port = listener.advertised
            log.info("listener %s (%s) on %s:%d, advertised as %s:%d", listener.name, listener.security_protocol,
                     _bracketed(listener.host) or "*", listener.port, _bracketed(host), port)

    def _endpoint(self) -> BrokerEndpoint:
        return endpoint_of(self.config)

    def _scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        store = self.state.scram_credentials
        return store.get(user, mechanism) if store is not None else None

    def _protocol_factory(self, security: ListenerSecurity) -> Callable[[], asyncio.BaseProtocol]:
        def connection() -> KafkaConnection:
            return KafkaConnection(self.state, self.connections, self.memory_pool, security)

        context = security.ssl_context
        if context is None:
            return connection
        return tls_protocol_factory(context, security.listener.name, connection, self._handshaking)

    def _open_storage(self) -> None:
        data_dir = self.config.data_dir
        try:
            self._lock.acquire()
        except LogDirInUseError as exc:
            raise StartupError(str(exc)) from None
        except OSError as exc:
            raise StartupError(f"cannot create or lock data dir {data_dir}: {exc.strerror or exc}") from None
        try:
            # The storage's own cluster id (a cluster database's) is checked against meta.properties.
            cluster_id = self.backend.cluster_id or self.config.cluster_id
            meta = ensure_meta_properties(data_dir, self.config.node_id, cluster_id)
            self.state.cluster_id = meta.cluster_id
            self.state.directory_id = kafka_uuid(meta.directory_id)
            self.state.authorizer = self._open_authorizer()
            self.state.features = self.backend.features(self.config)
            self.backend.load(self.config)
            self.state.scram_credentials = self.backend.scram_credentials()
        except StartupError:
            self._lock.release()
            raise
        except MetaPropertiesError as exc:
            self._lock.release()
            raise StartupError(str(exc)) from None
        except OSError as exc:
            self._lock.release()
            raise StartupError(f"cannot load data dir {data_dir}: {exc}") from None

    async def _open_dynamic_config(self) -> None:
        """The dynamic broker configs (broker/dynamic_config.py), in force before any service starts."""
        store = self.backend.broker_config_store()
        self.state.dynamic_config = DynamicBrokerConfig(self.config, store, self._apply_config)
        window_ms = self.config.quota_window_size_seconds * 1000
        self.state.quotas = ClientQuotas(store, self.config.quota_window_num, window_ms)
        self.state.connection_limits = ConnectionLimits(self.config.quota_window_num, window_ms)
        await self.state.dynamic_config.apply()

    async def _apply_config(self, config: BrokerConfig, topic_defaults: Mapping[str, object]) -> None:
        self.state.config = self.config = config
        await self.state.logs.set_log_defaults(topic_defaults)
        if not self.ready:  # at start: sized by the configs in force (log.cleaner.threads among them)
            self.cleaner = self._new_cleaner(config)
        elif self.cleaner is not None:
            self.cleaner.reconfigure(cleaner_config(config))

    def _new_cleaner(self, config: BrokerConfig) -> CleanerService | None:
        if not config.log_cleaner_enable or config.log_cleaner_threads <= 0:
            return None
        cleaner = self.backend.new_cleaner(cleaner_config(config))
        self.state.cleaner_stats = cleaner.stats  # for broker/metrics
        return cleaner

    def _open_authorizer(self) -> StandardAuthorizer | None:
        config = self.config
        if not config.authorizer_class_name:
            return None
        # Reloaded when the ACLs change through another broker sharing the store.
        store = self.backend.acl_store(lambda records: authorizer.reload(records))
        authorizer = StandardAuthorizer(super_users=config.super_user_principals,
                                        allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
                                        store=store)
        try:
            authorizer.load()
        except ValueError as exc:
            # Starting without them would open what the ACLs closed: refuse instead.
            raise StartupError(f"cannot load the ACLs: {exc}") from None
        return authorizer

    def _build_services(self) -> list[Service]:
        """Coordinators and other services with async start()/stop(), in start order."""
        from .services import build_services

        return build_services(self.state)

    async def _retention_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.log_retention_check_interval_ms / 1000)
            try:
                await self.state.logs.enforce_retention()
            except Exception:
                log.exception("retention check failed")

    async def stop(self) -> None:
        log.info("shutting down")
        self.ready = False
        await self._close_listeners()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.state.dynamic_config is not None:
            await self.state.dynamic_config.close()
        if self.cleaner is not None:  # before the logs close: a pass in flight is dropped, not swapped
            await self.cleaner.stop()
        await self.backend.leave()  # other brokers take over now, not after a lease
        for service in reversed(self._services):
            await service.stop()
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.stop()
        await self.backend.close()
        self._lock.release()
        log.info("stopped cleanly")
        self.stopped.set()

    async def _close_listeners(self) -> None:
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.close("broker shutting down", abort=conn.security.uses_tls)
        for transport in list(self._handshaking):  # TLS clients not yet connections
            transport.abort()  # type: ignore[attr-defined]
        if self._servers:
            try:
                await asyncio.wait_for(asyncio.gather(*(s.wait_closed() for s in self._servers)), 5)
            except TimeoutError:
                log.warning("connections did not close within 5 s")

    async def serve_forever(self) -> None:
        """The process's life: start, then run until SIGTERM or SIGINT (or `stop_requested`)."""
        # Handlers first: a SIGTERM that arrives while starting (right after the "listening" line)
        # still shuts down cleanly.
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop_requested.set)
        await self.start()
        # What start-up built (modules, classes, every loaded partition's segments and indexes)
        # lives as long as the process. Frozen, it leaves the collector's full passes, which
        # otherwise walked it all with the loop stopped: 50-130 ms once 200 partitions of 10
        # segments were loaded, which set bench s3-conn2000's p99 (61-98 ms, 11 ms frozen).
        # Only here, in the process's own run: an embedded broker leaves its host's heap alone.
        gc.freeze()
        await self.stop_requested.wait()
        await self.stop()


def _bracketed(host: str) -> str:
    """An IPv6 address as it is written before a port (`[::1]:9092`), so the log line is unambiguous."""
    return f"[{host}]" if ":" in host else host
