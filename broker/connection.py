"""One client connection: frames in, one request at a time, responses out in request order.

Like Kafka (which mutes a channel until its response is sent), requests on one connection are
handled strictly in sequence, so responses leave in correlation-id order even when clients
pipeline. Reading pauses while too many frames wait, while the broker-wide request memory budget
(queued.max.request.bytes, broker/memory_pool.py) cannot cover the frame being received, and
while the transport's send buffer is above its high-water mark.

Time limits, checked by one timer per connection that is re-armed lazily (activity only updates
a timestamp): a connection with no request in progress and no bytes for connections.max.idle.ms
is closed, as Kafka does; a request frame that has not fully arrived within
socket.request.receive.timeout.ms of its first byte is closed too, since a peer that trickles
bytes would otherwise hold its buffer and its memory reservation for ever.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import struct
import time
from collections import deque
from time import perf_counter
from typing import Any, Final, cast

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RefusedRequest, RequestHeader, UnsupportedRequest, decode_request, encode_response
from protocol.errors import ErrorCode, KafkaError
from protocol.fast_responses import Buffers
from protocol.frames import NEED_DATA, FrameDecoder, FrameTooLarge, sniff_foreign_protocol

from .connection_limits import ConnectionLimits, Verdict
from .dispatch import describe, dispatch, supported
from .handler import RequestContext
from .handlers.api_versions import api_keys
from .log_limit import LogLimit
from .memory_pool import MemoryPool
from .principal import ANONYMOUS, Session, canonical_host
from .quotas.manager import now_ms
from .security.listener_security import ListenerSecurity
from .security.sasl import SaslAuthenticator, SaslState
from .security.sasl_errors import AuthenticationFailed
from .security.ssl_principal import NoMatchingRule, peer_principal
from .state import BrokerState

__all__ = ("KafkaConnection",)

log = logging.getLogger(__name__)
MAX_QUEUED_FRAMES: Final = 16
WRITE_HIGH_WATER: Final = 4 << 20
_SIZE: Final = struct.Struct(">i")
_API_KEY: Final = struct.Struct(">h")
_SASL_KEYS: Final = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


# Closes for what a peer sent and refusals by the connection limits: one line each, at most this
# fast (broker/log_limit.py), so that a client misbehaving in a loop cannot flood the log.
_CLOSE_LOG_LIMIT: Final = LogLimit(per_second=50, burst=200)


def _log_close(level: int, message: str, *args: object) -> None:
    left_out = _CLOSE_LOG_LIMIT.allow()
    if left_out is None:
        return
    if left_out:
        log.warning("%d connection closes were not logged: more than %d a second", left_out,
                    _CLOSE_LOG_LIMIT.per_second)
    log.log(level, message, *args)


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(self, state: BrokerState, connections: set[KafkaConnection], memory_pool: MemoryPool,
                 security: ListenerSecurity) -> None:
        self.state = state
        self.security = security
        listener = security.listener
        self._connections = connections
        self._pool = memory_pool
        self._decoder = FrameDecoder(state.config.socket_request_max_bytes)
        self._frames: deque[bytes | memoryview] = deque()
        self._frame_ready = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._paused_for: set[str] = set()
        self._closing = False
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.session = Session(principal=ANONYMOUS, listener_name=listener.name,
                               security_protocol=listener.security_protocol, client_host="")
        self._task: asyncio.Task[None] | None = None
        # Bytes reserved from the pool: frames queued + the one being handled + the one arriving.
        self._held = 0
        self._queued_bytes = 0
        self._in_flight = 0
        self._waiting_for_memory = False
        self._sniffed = False
        self._loop = asyncio.get_running_loop()
        self._last_active = self._loop.time()
        self._frame_started: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._sasl: SaslAuthenticator | None = None
        self._handle_plain = self._handle
        self._unsent: Buffers = []  # responses held by _send, in request order
        self._flush_scheduled = False
        # A quota's throttle (broker/quotas): set by the request just handled, then waited out.
        self._throttle_ms = 0
        self._unmuted: asyncio.Future[None] | None = None
        self._limited_host: str | None = None  # counted by the connection limits until closed
        if security.sasl is not None:
            self._sasl = SaslAuthenticator(security.sasl, "?")
            self._handle = self._handle_sasl  # type: ignore[method-assign]
            self._decoder.set_limit(security.sasl.max_receive_size, "sasl.server.max.receive.size")

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream server's transport is a Transport (uvloop's too); asyncio.Protocol types it as the base
        self.transport = stream = cast(asyncio.Transport, transport)
        stream.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        if (size := self.state.config.socket_send_buffer_bytes) > 0 and \
                (sock := transport.get_extra_info("socket")) is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if peer:
            self.session = dataclasses.replace(self.session, client_host=canonical_host(peer[0]))
        if self.state.connection_limits is not None and not self._admitted(self.state.connection_limits):
            return
        if self.security.principal_mapper is not None:
            self._tls_principal(transport)
        if self._sasl is not None:
            self._sasl.peer = self.peer
        self._connections.add(self)
        self._task = self._loop.create_task(self._serve(), name=f"conn-{self.peer}")
        self._arm_timer(self._last_active + self.state.config.connections_max_idle_ms / 1000)

    def _admitted(self, limits: ConnectionLimits) -> bool:
        """broker/connection_limits.py: whether this connection may stay; one over a limit is
        closed, now or once its throttle time has passed, with one INFO line."""
        state, host = self.state, self.session.client_host
        quotas = state.quotas
        ip_rate = quotas.ip_connection_rate(host) if quotas is not None else None
        admission = limits.admit(state.config, host, self.security.listener.name, ip_rate, now_ms())
        if admission.verdict is Verdict.ADMIT:
            self._limited_host = host
            if admission.delay_ms:  # max.connection.creation.rate: read from it later
                self._pause("creation rate")
                self._loop.call_later(admission.delay_ms / 1000, self._resume, "creation rate")
            return True
        _log_close(logging.INFO, "closing connection from %s: %s", self.peer, admission.why)
        self._closing = True
        self.transport.pause_reading()  # type: ignore[union-attr]
        if admission.verdict is Verdict.REFUSE:
            self.transport.close()  # type: ignore[union-attr]
        else:
            self._loop.call_later(admission.delay_ms / 1000, self.transport.close)  # type: ignore[union-attr]
        return False

    def _tls_principal(self, transport: asyncio.BaseTransport) -> None:
        """An SSL listener's client is its certificate's subject (User:ANONYMOUS without one)."""
        assert self.security.principal_mapper is not None
        try:
            principal = peer_principal(transport.get_extra_info("ssl_object"), self.security.principal_mapper)
        except NoMatchingRule as exc:
            self.close(f"ssl.principal.mapping.rules: {exc}")
            return
        self.session = dataclasses.replace(self.session, principal=principal)

    def get_buffer(self, sizehint: int) -> memoryview:
        # The decoder's memory: the kernel writes a large frame straight into its own buffer.
        return self._decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        now = self._last_active = self._loop.time()
        decoder = self._decoder
        decoder.buffer_updated(nbytes)
        if not self._sniffed and not self._sniff():
            if not self._closing:
                self._frame_arriving(now)
            return
        queued = len(self._frames)
        try:
            while (frame := decoder.next_frame()) is not NEED_DATA:
                self._frames.append(frame)  # type: ignore[arg-type]
                self._queued_bytes += 4 + len(frame)  # type: ignore[arg-type]
        except FrameTooLarge as exc:
            self.close(f"{exc}")
            return
        if len(self._frames) > queued:
            self._frame_ready.set()
            self._frame_started = None
        if len(self._frames) >= MAX_QUEUED_FRAMES:
            self._pause("queue")
        self._frame_arriving(now)
        self._reserve()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._closing = True
        # Release the buffers now, not when this object is collected: the request loop may still
        # be finishing a request, and used to keep the connection alive through a reference cycle.
        self._decoder.clear()
        self._frames.clear()
        if self._limited_host is not None and self.state.connection_limits is not None:
            self.state.connection_limits.release(self._limited_host)
            self._limited_host = None
        held, self._held = self._held, 0
        self._queued_bytes = self._in_flight = 0
        self._pool.release(held)
        if self._waiting_for_memory:
            self._pool.forget(self._memory_freed)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # Wake the request loop so that it ends. A request being handled is not cancelled: like
        # Kafka, the broker finishes it and drops the response (cancelling a DeleteTopics or a
        # coordinator write half way would leave its state half changed).
        self._can_write.set()
        self._frame_ready.set()
        if self._unmuted is not None and not self._unmuted.done():
            self._unmuted.set_result(None)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # -- flow control and memory ------------------------------------------------------------------

    def _pause(self, reason: str) -> None:
        if not self._paused_for and self.transport is not None:
            self.transport.pause_reading()
        self._paused_for.add(reason)

    def _resume(self, reason: str) -> None:
        if reason not in self._paused_for:
            return
        self._paused_for.discard(reason)
        if not self._paused_for and self.transport is not None and not self._closing:
            self.transport.resume_reading()
            # Time spent paused by the broker does not count against the peer's frame.
            self._frame_arriving(self._loop.time(), restart=True)

    def _wanted(self) -> int:
        return self._queued_bytes + self._in_flight + self._decoder.pending

    def _reserve(self) -> None:
        """Bring the pool reservation to what this connection holds or is about to receive."""
        if self._closing:
            return
        want = self._wanted()
        if want < self._held:
            surplus, self._held = self._held - want, want
            self._pool.release(surplus)
        elif want > self._held and not self._waiting_for_memory:
            if self._pool.try_reserve(want - self._held):
                self._held = want
            else:
                self._waiting_for_memory = True
                self._pause("memory")
                self._pool.wait(self._memory_freed)

    def _memory_freed(self) -> bool:
        if self._closing:
            return True
        want = self._wanted()
        if want > self._held and not self._pool.try_reserve(want - self._held):
            return False
        self._held = max(want, self._held)
        self._waiting_for_memory = False
        self._resume("memory")
        return True

    # -- time limits ------------------------------------------------------------------------------

    def _frame_arriving(self, now: float, restart: bool = False) -> None:
        if not self._decoder.buffered:
            self._frame_started = None
        elif self._frame_started is None or restart:
            self._frame_started = now
            self._arm_timer(now + self.state.config.socket_request_receive_timeout_ms / 1000)

    def _arm_timer(self, when: float) -> None:
        if self._timer is not None:
            if self._timer.when() <= when:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._check_time_limits)

    def _check_time_limits(self) -> None:
        self._timer = None
        if self._closing:
            return
        config = self.state.config
        now = self._loop.time()
        if self._frames or self._in_flight or self._paused_for:
            deadline = now + config.connections_max_idle_ms / 1000  # busy, not idle
        elif self._frame_started is not None:
            deadline = self._frame_started + config.socket_request_receive_timeout_ms / 1000
            if now >= deadline:
                self.close(f"a request frame did not arrive whole within "
                           f"socket.request.receive.timeout.ms={config.socket_request_receive_timeout_ms} "
                           f"({self._decoder.buffered} of {self._decoder.pending} bytes came)")
                return
        else:
            deadline = self._last_active + config.connections_max_idle_ms / 1000
            if now >= deadline:
                self.close(f"idle for connections.max.idle.ms={config.connections_max_idle_ms}",
                           level=logging.INFO)
                return
        self._arm_timer(deadline)

    def _sniff(self) -> bool:
        """Whether the first bytes may be Kafka; closes the connection when they are not."""
        head = self._decoder.head(4)
        if len(head) < 4:
            return False
        self._sniffed = True
        if (what := sniff_foreign_protocol(head)) is not None:
            self.close(f"looks like {what}")
            return False
        return True

    # -- request loop -----------------------------------------------------------------------------

    def close(self, reason: str, level: int = logging.WARNING, abort: bool = False) -> None:
        """`abort`: drop the connection at once; a TLS close otherwise waits for the peer's
        close_notify (up to 30 s), longer than a broker shutting down waits."""
        if not self._closing:
            _log_close(level, "closing connection from %s: %s", self.peer, reason)
        self._closing = True
        if self.transport is not None:
            if not abort:
                self._flush()  # the answers to the requests before the one that closes
            self.transport.abort() if abort else self.transport.close()

    async def _serve(self) -> None:
        try:
            await self._serve_requests()
        except Exception:
            # dispatch answers a handler's failure itself; this is one around it (decoding, the
            # send). Nothing reads this connection any more: close it, as Kafka closes a
            # connection whose request it cannot process, rather than leave the client waiting
            # out its request timeout.
            log.exception("request loop of the connection from %s failed", self.peer)
            self.close("its request loop failed", level=logging.ERROR)

    async def _serve_requests(self) -> None:
        while not self._closing:
            if not self._frames:
                self._frame_ready.clear()
                await self._frame_ready.wait()
                continue
            frame = self._frames.popleft()
            self._in_flight = 4 + len(frame)
            self._queued_bytes -= self._in_flight
            if len(self._frames) < MAX_QUEUED_FRAMES // 2:
                self._resume("queue")
            response = await self._handle(frame)
            del frame
            if response is not None and self.transport is not None and not self._closing:
                self._send(response)
                await self._can_write.wait()
            if self._throttle_ms and not self._closing:
                await self._throttled()
            self._in_flight = 0
            self._last_active = self._loop.time()
            self._reserve()

    async def _throttled(self) -> None:
        """KIP-219: a client over its quota has its answer at once, with throttle_time_ms, and
        nothing more is read from it until that time has passed, as Kafka mutes the channel."""
        delay, self._throttle_ms = self._throttle_ms / 1000, 0
        self._flush()
        self._pause("quota")
        unmuted = self._unmuted = self._loop.create_future()
        timer = self._loop.call_later(delay, unmuted.set_result, None)
        try:
            await unmuted
        finally:
            timer.cancel()
            self._unmuted = None
            self._resume("quota")

    def _send(self, response: bytes | Buffers) -> None:
        """Queue a response. While more requests wait, a small one is held and leaves with the
        responses that follow in one writev: a pipelining producer's five acknowledgements cost
        one send, not five. It is held no longer than this turn of the event loop (a request that
        has to wait sends it at once), so the client sees no extra delay but the handling of the
        requests queued behind it."""
        pending = self._unsent
        if type(response) is list:  # a Fetch's buffers: its record bytes go out uncopied
            pending.extend(response)
        else:
            pending.append(response)  # type: ignore[arg-type]
            if self._frames and len(pending) < MAX_QUEUED_FRAMES:
                if not self._flush_scheduled:
                    self._flush_scheduled = True
                    self._loop.call_soon(self._flush)
                return
        self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending = self._unsent
        if not pending:
            return
        self._unsent = []
        if self.transport is None or self.transport.is_closing():
            return
        if len(pending) == 1:
            self.transport.write(pending[0])
        else:
            self.transport.writelines(pending)

    async def _handle(self, frame: bytes | memoryview) -> bytes | Buffers | None:
        try:
            header, request = decode_request(frame, supported)
        except UnsupportedRequest as exc:
            return self._unsupported(exc.header)
        except RefusedRequest as exc:
            self.close(f"{describe(exc.header)} failed: {exc}")  # as dispatch's null check says it
            return None
        except KafkaError as exc:
            self.close(f"cannot parse request: {exc.message}")
            return None
        return await self._dispatch(header, request)

    async def _dispatch(self, header: RequestHeader, request: Any) -> bytes | Buffers | None:
        ctx = RequestContext(header=header, broker=self.state, peer=self.peer, session=self.session, sasl=self._sasl)
        metrics = self.state.metrics
        started = perf_counter() if metrics is not None else 0.0
        try:
            response = await dispatch(ctx, request)
        except KafkaError as exc:
            self.close(f"{describe(header)} failed: {exc}")
            return None
        finally:
            if metrics is not None:
                # Kafka's RequestMetrics time: decoded to response ready (the write is queued).
                metrics.request(header.api_key).observe(header.api_version, perf_counter() - started)
        self._throttle_ms = ctx.throttle_ms
        return response

    # -- SASL listeners: until authenticated, and while sessions expire (KIP-368) ----------------

    async def _handle_sasl(self, frame: bytes | memoryview) -> bytes | Buffers | None:
        """_handle on a SASL listener while it must watch requests (broker/security/sasl.py);
        PLAINTEXT and SSL connections, and SASL ones once authenticated without
        connections.max.reauth.ms, never come here."""
        sasl = self._sasl
        assert sasl is not None
        if sasl.state is SaslState.RAW_TOKEN:
            return self._raw_token(sasl, frame)
        # The API key leads every request header: checked before the request is parsed, as Kafka does.
        api_key = _API_KEY.unpack_from(frame)[0] if len(frame) >= 2 else -1
        if not self._sasl_allows(sasl, api_key):
            return None
        response = await self._handle_plain(frame)
        if api_key == ApiKey.API_VERSIONS:
            sasl.versions_sent()
        return self._after_sasl_step(sasl, response)

    def _sasl_allows(self, sasl: SaslAuthenticator, api_key: int) -> bool:
        if sasl.state is SaslState.COMPLETE and api_key != ApiKey.SASL_HANDSHAKE:
            if sasl.session_expires is not None and time.monotonic() >= sasl.session_expires:
                self.close(f"{_api_name(api_key)} request after the SASL session of {sasl.principal} expired "
                           f"(its lifetime was {sasl.session_lifetime_ms} ms: connections.max.reauth.ms="
                           f"{sasl.config.reauth_ms}, or its token's expiry) without re-authentication")
                return False
            return True
        if not sasl.allows(api_key):
            self.close(f"{_api_name(api_key)} request on SASL listener {self.session.listener_name} before "
                       f"authentication (state {sasl.state.name}); a client must send SaslHandshake first")
            return False
        return True

    def _after_sasl_step(self, sasl: SaslAuthenticator, response: bytes | Buffers | None) -> bytes | Buffers | None:
        if sasl.state is SaslState.FAILED:
            # Answer (so the client can say why), then close: transport.close() sends what is queued.
            if response is not None and self.transport is not None:
                self._send(response)
                self._flush()
            self._close_after_failed_authentication()
            return None
        if sasl.state is SaslState.COMPLETE and sasl.principal is not None:
            if sasl.principal != self.session.principal:
                self.session = dataclasses.replace(self.session, principal=sasl.principal)
                self._decoder.set_limit(self.state.config.socket_request_max_bytes, "socket.request.max.bytes")
                log.debug("%s authenticated as %s on listener %s", self.peer, sasl.principal,
                         self.session.listener_name)
            if sasl.session_expires is None:
                self._handle = self._handle_plain  # type: ignore[method-assign]
        return response

    def _close_after_failed_authentication(self) -> None:
        """Kafka's connection.failed.authentication.delay.ms: nothing more is read, the answer goes
        out now and the close comes after the delay, so the client reads why before the connection
        goes (a close racing the client's next bytes would reset it, losing the answer), and a
        password guesser is slowed down."""
        delay_ms = self.state.config.connection_failed_authentication_delay_ms
        if delay_ms == 0 or self.transport is None or self._closing:
            self.close("SASL authentication failed", level=logging.INFO)
            return
        _log_close(logging.INFO, "closing connection from %s in %d ms: SASL authentication failed", self.peer, delay_ms)
        self._closing = True
        self.transport.pause_reading()
        self._loop.call_later(delay_ms / 1000, self.transport.close)

    def _raw_token(self, sasl: SaslAuthenticator, frame: bytes | memoryview) -> bytes | None:
        """A token after SaslHandshake v0: unframed by Kafka headers both ways."""
        try:
            answer = sasl.authenticate(bytes(frame))
        except AuthenticationFailed:
            self._close_after_failed_authentication()  # v0 has no way to say why
            return None
        self._after_sasl_step(sasl, None)
        return _SIZE.pack(len(answer)) + answer

    def _unsupported(self, header: RequestHeader) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            # KIP-511: answer a too-new ApiVersions with a v0 body naming our range.
            body = build(ApiVersionsResponseV0, {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": api_keys(RequestContext(header=header, broker=self.state, peer=self.peer,
                                                    session=self.session)),
            })
            return encode_response(header.correlation_id, body)
        if header.api_key in _SASL_KEYS:
            self.close(f"{describe(header)}: a SASL client on a PLAINTEXT listener (SASL is not enabled)")
            return None
        self.close(f"unsupported request: {describe(header)}")
        return None


