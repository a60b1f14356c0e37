"""The broker-wide budget for request bytes being received, queued or handled: Kafka's
`queued.max.request.bytes` and its SimpleMemoryPool.

A connection reserves the announced size of each frame as its size prefix arrives and gives the
bytes back once the request has been handled. A connection that cannot reserve stops reading
(its socket is paused) and waits in line; releases wake the waiters first come, first served.
Because a reservation covers the whole announced frame, every frame that holds one can complete,
so the waiters cannot deadlock each other. One rule differs from a strict pool: a reservation
always succeeds while nothing else is reserved, so a single request larger than the budget (up to
socket.request.max.bytes) is still served, alone.

Kafka's default of -1 (unbounded) is accepted; eosbroker's default is 200 MiB, two requests of the
default socket.request.max.bytes, since an unbounded pool lets a few clients that announce large
frames and send them slowly hold gigabytes of buffers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ("MemoryPool",)

# Called with no argument when memory was released; returns True once it got what it waited for.
Waiter = Callable[[], bool]


class MemoryPool:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity  # < 0: unbounded
        self.reserved = 0
        self._waiters: deque[Waiter] = deque()

    def try_reserve(self, size: int) -> bool:
        if self.capacity >= 0 and self.reserved and self.reserved + size > self.capacity:
            return False
        self.reserved += size
        return True

    def release(self, size: int) -> None:
        self.reserved -= size
        while self._waiters and self._waiters[0]():
            self._waiters.popleft()

    def wait(self, waiter: Waiter) -> None:
        """Call `waiter` on each release until it returns True (it retries its reservation)."""
        self._waiters.append(waiter)

    def forget(self, waiter: Waiter) -> None:
        """A waiter whose connection closed."""
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass
