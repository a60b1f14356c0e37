"""One client connection: frames in, one request at a time, responses out in request order.

Like Kafka (which mutes a channel until its response is sent), requests on one connection are
handled strictly in sequence, so responses leave in correlation-id order even when clients
pipeline. Back-pressure: reading pauses while too many frames wait or the transport's send buffer
is above its high-water mark.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Final

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, UnsupportedRequest, decode_request, encode_response
from protocol.errors import ErrorCode, KafkaError
from protocol.frames import NEED_DATA, FrameDecoder, FrameTooLarge

from .dispatch import describe, dispatch, supported
from .handler import NO_RESPONSE, RequestContext
from .handlers.api_versions import api_keys
from .state import BrokerState

__all__ = ("KafkaConnection",)

log = logging.getLogger(__name__)
MAX_QUEUED_FRAMES: Final = 16
WRITE_HIGH_WATER: Final = 4 << 20


class KafkaConnection(asyncio.Protocol):
    def __init__(self, state: BrokerState, connections: set[KafkaConnection]) -> None:
        self.state = state
        self._connections = connections
        self._decoder = FrameDecoder(state.config.socket_request_max_bytes)
        self._frames: deque[bytes] = deque()
        self._frame_ready = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._paused = False
        self._closing = False
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._task: asyncio.Task[None] | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._connections.add(self)
        self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"conn-{self.peer}")

    def data_received(self, data: bytes) -> None:
        self._decoder.receive_data(data)
        try:
            while (frame := self._decoder.next_frame()) is not NEED_DATA:
                self._frames.append(frame)  # type: ignore[arg-type]
        except FrameTooLarge as exc:
            self.close(f"{exc}")
            return
        if self._frames:
            self._frame_ready.set()
        if len(self._frames) >= MAX_QUEUED_FRAMES and not self._paused and self.transport:
            self._paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self._closing = True
        self._can_write.set()
        if self._task is not None:
            self._task.cancel()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # -- request loop -----------------------------------------------------------------------------

    def close(self, reason: str) -> None:
        if not self._closing:
            log.warning("closing connection from %s: %s", self.peer, reason)
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    async def _serve(self) -> None:
        while not self._closing:
            if not self._frames:
                self._frame_ready.clear()
                await self._frame_ready.wait()
                continue
            frame = self._frames.popleft()
            if self._paused and len(self._frames) < MAX_QUEUED_FRAMES // 2 and self.transport:
                self._paused = False
                self.transport.resume_reading()
            response = await self._handle(frame)
            if response is not None and self.transport is not None and not self._closing:
                self.transport.write(response)
                await self._can_write.wait()

    async def _handle(self, frame: bytes) -> bytes | None:
        try:
            header, request = decode_request(frame, supported)
        except UnsupportedRequest as exc:
            return self._unsupported(exc.header)
        except KafkaError as exc:
            self.close(f"cannot parse request: {exc.message}")
            return None
        ctx = RequestContext(header=header, broker=self.state, peer=self.peer)
        try:
            response = await dispatch(ctx, request)
        except KafkaError as exc:
            self.close(f"{describe(header)} failed: {exc.message}")
            return None
        if response is NO_RESPONSE:
            return None
        return encode_response(header.correlation_id, response)

    def _unsupported(self, header: RequestHeader) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            # KIP-511: answer a too-new ApiVersions with a v0 body naming our range.
            body = build(ApiVersionsResponseV0, {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": api_keys(RequestContext(header=header, broker=self.state, peer=self.peer)),
            })
            return encode_response(header.correlation_id, body)
        self.close(f"unsupported request: {describe(header)}")
        return None


