"""One client connection as an asyncio protocol: the socket's events go to the framing
(framing.py), each frame through the authentication gate (auth_gate.py) to dispatch
(requests.py), one request at a time but for Produce requests, which are pipelined (answers.py),
and the answers out in request order."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from typing import Final, cast

from coordinator.share.sessions import connection_id
from protocol.api_keys import ApiKey

from ..connection_limits import ConnectionLimits, Verdict
from ..handler import Later
from ..memory_pool import MemoryPool
from ..principal import Session
from ..quotas.manager import now_ms
from ..security.listener_security import ListenerSecurity
from ..state import BrokerState
from .answers import MAX_PIPELINED, Answers
from .auth_gate import AuthGate, Step, api_key_of
from .closes import log, log_close
from .framing import Frame, FrameReader
from .requests import RequestHandler, Response, ResponseWriter

__all__ = ("KafkaConnection",)

WRITE_HIGH_WATER: Final = 4 << 20


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(self, state: BrokerState, connections: set[KafkaConnection], memory_pool: MemoryPool,
                 security: ListenerSecurity, clock: Callable[[], float] = time.monotonic) -> None:
        self.state = state
        self.security = security
        self._connections = connections
        self._loop = asyncio.get_running_loop()
        self.reader = FrameReader(state, memory_pool, self.close)
        self.gate = AuthGate(security, clock)
        self.requests = RequestHandler(state, self.gate, self.close)
        self.writer = ResponseWriter(self.reader.frames)
        self.answers = Answers(self.writer, self.close)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._task: asyncio.Task[None] | None = None
        self._unmuted: asyncio.Future[None] | None = None
        self._closing: asyncio.Task[None] | None = None  # a close waiting for the answers before it
        self._limited_host: str | None = None  # counted by the connection limits until closed
        if security.sasl is not None:
            self.reader.decoder.set_limit(security.sasl.max_receive_size, "sasl.server.max.receive.size")

    @property
    def session(self) -> Session:
        return self.gate.session

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream server's transport is a Transport (uvloop's too); asyncio.Protocol types it as the base
        self.transport = self.reader.transport = self.writer.transport = stream = cast(asyncio.Transport, transport)
        stream.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        if (size := self.state.config.socket_send_buffer_bytes) > 0 and \
                (sock := transport.get_extra_info("socket")) is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
        peer = transport.get_extra_info("peername")
        self.peer = self.requests.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.gate.connected(self.peer, peer[0] if peer else None)
        if self.state.connection_limits is not None and not self._admitted(stream, self.state.connection_limits):
            return
        if self.security.principal_mapper is not None and \
                (refused := self.gate.tls_principal(transport.get_extra_info("ssl_object"))) is not None:
            self.close(refused)
        self._connections.add(self)
        self._task = self._loop.create_task(self._serve(), name=f"conn-{self.peer}")
        self.reader.start(stream)

    def _admitted(self, transport: asyncio.Transport, limits: ConnectionLimits) -> bool:
        """broker/connection_limits.py: whether this connection may stay; one over a limit is
        closed, now or once its throttle time has passed, with one INFO line."""
        state, host = self.state, self.session.client_host
        quotas = state.quotas
        ip_rate = quotas.ip_connection_rate(host) if quotas is not None else None
        admission = limits.admit(state.config, host, self.security.listener.name, ip_rate, now_ms())
        if admission.verdict is Verdict.ADMIT:
            self._limited_host = host
            if admission.delay_ms:  # max.connection.creation.rate: read from it later
                self.reader.pause("creation rate")
                self._loop.call_later(admission.delay_ms / 1000, self.reader.resume, "creation rate")
            return True
        log_close(logging.INFO, "closing connection from %s: %s", self.peer, admission.why)
        self.reader.closing = True
        transport.pause_reading()
        if admission.verdict is Verdict.REFUSE:
            transport.close()
        else:
            self._loop.call_later(admission.delay_ms / 1000, transport.close)
        return False

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.reader.buffer_updated(nbytes)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        # Release the buffers now, not when this object is collected, and wake the request loop so
        # that it ends. A request being handled is not cancelled: like Kafka, the broker finishes
        # it and drops the response (cancelling a DeleteTopics or a coordinator write half way
        # would leave its state half changed).
        self.reader.lost()
        self.answers.connection_lost()
        if self._limited_host is not None and self.state.connection_limits is not None:
            self.state.connection_limits.release(self._limited_host)
            self._limited_host = None
        if self._unmuted is not None and not self._unmuted.done():
            self._unmuted.set_result(None)
        if self.state.share_coordinator is not None:  # the share sessions it opened end (KIP-932)
            self.state.share_coordinator.connection_closed(connection_id(self.session.listener_name, self.peer))

    def pause_writing(self) -> None:
        self.reader.can_write.clear()

    def resume_writing(self) -> None:
        self.reader.can_write.set()

    # -- request loop -----------------------------------------------------------------------------

    def close(self, reason: str, level: int = logging.WARNING, abort: bool = False) -> None:
        """`abort`: drop the connection at once; a TLS close otherwise waits for the peer's
        close_notify (up to 30 s), longer than a broker shutting down waits."""
        if not self.reader.closing:
            log_close(level, "closing connection from %s: %s", self.peer, reason)
        self.reader.closing = True
        transport = self.transport
        if transport is None:
            return
        if abort:
            transport.abort()
        elif self.answers.waiting and not self.answers.lost:
            # The answers to the requests before the one that closes first: their batches are
            # sequenced and may be committed, and a producer told nothing would send them again.
            transport.pause_reading()
            self._closing = self._loop.create_task(self._close_when_answered(transport))
        else:
            self.writer.flush()
            transport.close()

    async def _close_when_answered(self, transport: asyncio.Transport) -> None:
        await self.answers.drained()
        self.writer.flush()
        transport.close()

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
        reader, answers, requests = self.reader, self.answers, self.requests
        while not reader.closing:
            frame = reader.take()
            if frame is None:
                await reader.wait_for_frame()
                continue
            if answers.waiting and api_key_of(frame) != ApiKey.PRODUCE:
                await answers.drained()  # only a Produce goes on behind a Produce (answers.py)
            response = await (self._handle_watched(frame) if self.gate.watching else requests.handle(frame))
            del frame
            if isinstance(response, asyncio.Future):  # added even when closing: its outcome is read
                answers.add(response)
            elif response is not None and self.transport is not None and not reader.closing:
                answers.add(response)
            if not reader.can_write.is_set():
                await reader.can_write.wait()
            if requests.throttle_ms and not reader.closing:
                await answers.drained()
                await self._throttled()
            reader.request_done()
            if answers.waiting >= MAX_PIPELINED:
                await answers.room()

    async def _throttled(self) -> None:
        """KIP-219: a client over its quota has its answer at once, with throttle_time_ms, and
        nothing more is read from it until that time has passed, as Kafka mutes the channel."""
        delay, self.requests.throttle_ms = self.requests.throttle_ms / 1000, 0
        self.writer.flush()
        self.reader.pause("quota")
        unmuted = self._unmuted = self._loop.create_future()
        timer = self._loop.call_later(delay, unmuted.set_result, None)
        try:
            await unmuted
        finally:
            timer.cancel()
            self._unmuted = None
            self.reader.resume("quota")

    # -- SASL listeners: until authenticated, and while sessions expire (KIP-368) ----------------

    async def _handle_watched(self, frame: Frame) -> Response | Later | None:
        gate = self.gate
        if gate.expects_raw_token:
            return self._raw_token(frame)
        api_key = api_key_of(frame)
        if (refused := gate.refusal(api_key)) is not None:
            self.close(refused)
            return None
        response = await self.requests.handle(frame)
        return self._after_sasl_step(gate.handled(api_key), response)

    def _after_sasl_step(self, step: Step, response: Response | Later | None) -> Response | Later | None:
        if step is Step.FAILED:
            # Answer (so the client can say why), then close: transport.close() sends what is queued.
            if response is not None and not isinstance(response, asyncio.Future) and self.transport is not None:
                self.writer.send(response)  # (a SASL answer: never a Later)
                self.writer.flush()
            self._close_after_failed_authentication()
            return None
        if step is Step.AUTHENTICATED:
            self.reader.decoder.set_limit(self.state.config.socket_request_max_bytes, "socket.request.max.bytes")
            log.debug("%s authenticated as %s on listener %s", self.peer, self.session.principal,
                      self.session.listener_name)
        return response

    def _close_after_failed_authentication(self) -> None:
        """Kafka's connection.failed.authentication.delay.ms: nothing more is read, the answer goes
        out now and the close comes after the delay, so the client reads why before the connection
        goes (a close racing the client's next bytes would reset it, losing the answer), and a
        password guesser is slowed down."""
        delay_ms = self.state.config.connection_failed_authentication_delay_ms
        if delay_ms == 0 or self.transport is None or self.reader.closing:
            self.close("SASL authentication failed", level=logging.INFO)
            return
        log_close(logging.INFO, "closing connection from %s in %d ms: SASL authentication failed", self.peer, delay_ms)
        self.reader.closing = True
        self.transport.pause_reading()
        self._loop.call_later(delay_ms / 1000, self.transport.close)

    def _raw_token(self, frame: Frame) -> bytes | None:
        """A token after SaslHandshake v0: unframed by Kafka headers both ways."""
        answer = self.gate.raw_token(frame)
        if answer is None:
            self._close_after_failed_authentication()  # v0 has no way to say why
            return None
        self._after_sasl_step(self.gate.step(), None)
        return answer
