"""Framing and flow control of one connection: received bytes in, request frames out.

Sans-socket: it is driven by asyncio.BufferedProtocol's calls (get_buffer, buffer_updated) and
pauses reading on whatever transport it is given, so tests drive it with a fake one. Reading
pauses while any reason holds (uvicorn's FlowControl keeps one flag; a connection has several):
too many frames wait (pipelining), the broker-wide request memory budget
(queued.max.request.bytes, broker/memory_pool.py) cannot cover the frame being received, a quota's
throttle mutes the connection, or max.connection.creation.rate delays it. Writing waits while the
transport's send buffer is above its high-water mark.

Time limits, checked by one timer per connection that is re-armed lazily (activity only updates
a timestamp): a connection with no request in progress and no bytes for connections.max.idle.ms
is closed, as Kafka does; a request frame that has not fully arrived within
socket.request.receive.timeout.ms of its first byte is closed too, since a peer that trickles
bytes would otherwise hold its buffer and its memory reservation for ever.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Final, Protocol

from protocol.frames import NEED_DATA, FrameDecoder, FrameTooLarge, sniff_foreign_protocol

from ..config import BrokerConfig
from ..memory_pool import MemoryPool
from .closes import Close

__all__ = ("MAX_QUEUED_FRAMES", "Configured", "Frame", "FrameReader")

MAX_QUEUED_FRAMES: Final = 16
Frame = bytes | memoryview


class Configured(Protocol):
    """Where the current configuration is read (BrokerState: dynamic configs replace it)."""

    @property
    def config(self) -> BrokerConfig: ...


class FrameReader:
    def __init__(self, state: Configured, pool: MemoryPool, close: Close) -> None:
        self._state = state
        self._pool = pool
        self._close = close
        self.decoder = FrameDecoder(state.config.socket_request_max_bytes)
        self.frames: deque[Frame] = deque()
        self._frame_ready = asyncio.Event()
        self.can_write = asyncio.Event()
        self.can_write.set()
        self.paused_for: set[str] = set()
        self.closing = False
        self.transport: asyncio.Transport | None = None
        # Bytes reserved from the pool: frames queued + the one being handled + the one arriving.
        self._held = 0
        self._queued_bytes = 0
        self._in_flight = 0
        self._waiting_for_memory = False
        self._sniffed = False
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()
        self._frame_started: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self, transport: asyncio.Transport) -> None:
        """The connection is admitted: its idle time counts from now."""
        self.transport = transport
        self._arm_timer(self.last_active + self._state.config.connections_max_idle_ms / 1000)

    # -- bytes in, frames out ---------------------------------------------------------------------

    def get_buffer(self) -> memoryview:
        # The decoder's memory: the kernel writes a large frame straight into its own buffer.
        return self.decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        now = self.last_active = self._loop.time()
        decoder = self.decoder
        decoder.buffer_updated(nbytes)
        if not self._sniffed and not self._sniff():
            if not self.closing:
                self._frame_arriving(now)
            return
        frames = self.frames
        queued = len(frames)
        try:
            while (frame := decoder.next_frame()) is not NEED_DATA:
                frames.append(frame)  # type: ignore[arg-type]
                self._queued_bytes += 4 + len(frame)  # type: ignore[arg-type]
        except FrameTooLarge as exc:
            self._close(f"{exc}")
            return
        if len(frames) > queued:
            self._frame_ready.set()
            self._frame_started = None
        if len(frames) >= MAX_QUEUED_FRAMES:
            self.pause("queue")
        self._frame_arriving(now)
        self._reserve()

    def _sniff(self) -> bool:
        """Whether the first bytes may be Kafka; closes the connection when they are not."""
        head = self.decoder.head(4)
        if len(head) < 4:
            return False
        self._sniffed = True
        if (what := sniff_foreign_protocol(head)) is not None:
            self._close(f"looks like {what}")
            return False
        return True

    def take(self) -> Frame | None:
        """The next request frame, now in flight until request_done(); None when none waits."""
        if not self.frames:
            return None
        frame = self.frames.popleft()
        self._in_flight = 4 + len(frame)
        self._queued_bytes -= self._in_flight
        if len(self.frames) < MAX_QUEUED_FRAMES // 2:
            self.resume("queue")
        return frame

    async def wait_for_frame(self) -> None:
        """Until a frame arrives or the connection is lost."""
        self._frame_ready.clear()
        await self._frame_ready.wait()

    def request_done(self) -> None:
        self._in_flight = 0
        self.last_active = self._loop.time()
        self._reserve()

    def lost(self) -> None:
        """The connection is gone: release its buffers and memory now, and wake the request loop."""
        self.closing = True
        self.decoder.clear()
        self.frames.clear()
        held, self._held = self._held, 0
        self._queued_bytes = self._in_flight = 0
        self._pool.release(held)
        if self._waiting_for_memory:
            self._pool.forget(self._memory_freed)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.can_write.set()
        self._frame_ready.set()

    # -- flow control and memory ------------------------------------------------------------------

    def pause(self, reason: str) -> None:
        if not self.paused_for and self.transport is not None:
            self.transport.pause_reading()
        self.paused_for.add(reason)

    def resume(self, reason: str) -> None:
        if reason not in self.paused_for:
            return
        self.paused_for.discard(reason)
        if not self.paused_for and self.transport is not None and not self.closing:
            self.transport.resume_reading()
            # Time spent paused by the broker does not count against the peer's frame.
            self._frame_arriving(self._loop.time(), restart=True)

    def _wanted(self) -> int:
        return self._queued_bytes + self._in_flight + self.decoder.pending

    def _reserve(self) -> None:
        """Bring the pool reservation to what this connection holds or is about to receive."""
        if self.closing:
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
                self.pause("memory")
                self._pool.wait(self._memory_freed)

    def _memory_freed(self) -> bool:
        if self.closing:
            return True
        want = self._wanted()
        if want > self._held and not self._pool.try_reserve(want - self._held):
            return False
        self._held = max(want, self._held)
        self._waiting_for_memory = False
        self.resume("memory")
        return True

    # -- time limits ------------------------------------------------------------------------------

    def _frame_arriving(self, now: float, restart: bool = False) -> None:
        if not self.decoder.buffered:
            self._frame_started = None
        elif self._frame_started is None or restart:
            self._frame_started = now
            self._arm_timer(now + self._state.config.socket_request_receive_timeout_ms / 1000)

    def _arm_timer(self, when: float) -> None:
        if self._timer is not None:
            if self._timer.when() <= when:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._check_time_limits)

    def _check_time_limits(self) -> None:
        self._timer = None
        if self.closing:
            return
        config = self._state.config
        now = self._loop.time()
        if self.frames or self._in_flight or self.paused_for:
            deadline = now + config.connections_max_idle_ms / 1000  # busy, not idle
        elif self._frame_started is not None:
            deadline = self._frame_started + config.socket_request_receive_timeout_ms / 1000
            if now >= deadline:
                self._close(f"a request frame did not arrive whole within "
                            f"socket.request.receive.timeout.ms={config.socket_request_receive_timeout_ms} "
                            f"({self.decoder.buffered} of {self.decoder.pending} bytes came)")
                return
        else:
            deadline = self.last_active + config.connections_max_idle_ms / 1000
            if now >= deadline:
                self._close(f"idle for connections.max.idle.ms={config.connections_max_idle_ms}",
                            level=logging.INFO)
                return
        self._arm_timer(deadline)
