"""Background work of the coordinators, supervised: no failure is dropped with its exception.

A coordinator spawns work beside its actor (writing markers, timers, loading). If such work
raises, asyncio would keep the exception on a task nobody awaits; here it is logged with its
traceback and the work runs again after a capped exponential back-off, until it succeeds or the
supervisor is stopped. Work given to a supervisor must therefore be safe to run again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from protocol.errors import KafkaError

__all__ = ("DEFAULT_BACKOFF", "Backoff", "RateLimitedLog", "TaskSupervisor")

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Exponential back-off with a cap, as Kafka's ExponentialBackoff (without jitter)."""

    initial_ms: int = 100
    max_ms: int = 10_000

    def delay_s(self, failures: int) -> float:
        """Seconds to wait after the given number of consecutive failures (>= 1)."""
        return min(self.initial_ms << min(failures - 1, 32), self.max_ms) / 1000


DEFAULT_BACKOFF: Final = Backoff()


class RateLimitedLog:
    """Says whether a repeated failure deserves a log line: the first one, then one per interval,
    so a partition that stays broken for hours does not flood the log."""

    def __init__(self, interval_s: float = 30.0) -> None:
        self.interval_s = interval_s
        self._last = float("-inf")
        self.suppressed = 0

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._last = now
            return True
        self.suppressed += 1
        return False


class TaskSupervisor:
    """Owns a coordinator's background tasks; stop() cancels every one still running."""

    def __init__(self, owner: str, backoff: Backoff = DEFAULT_BACKOFF) -> None:
        self.owner = owner
        self.backoff = backoff
        self._tasks: set[asyncio.Task[object]] = set()

    def spawn(self, name: str, work: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        """Run work() in a task; on failure log it and run work() again after a back-off."""
        task = asyncio.get_running_loop().create_task(self._supervise(name, work), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _supervise(self, name: str, work: Callable[[], Awaitable[T]]) -> T:
        failures = 0
        while True:
            try:
                return await work()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                delay = self.backoff.delay_s(failures)
                if isinstance(exc, KafkaError) and exc.code.retriable:
                    # Expected while storage or leadership is in flux (a database restart, a
                    # failover): one line, no traceback; the retry is the remedy.
                    log.warning("%s: %s failed (failure %d): %s; running it again in %.1f s", self.owner,
                                name, failures, exc, delay)
                else:
                    log.error("%s: %s failed (failure %d); running it again in %.1f s", self.owner,
                              name, failures, delay, exc_info=exc)
                await asyncio.sleep(delay)

    @property
    def running(self) -> frozenset[asyncio.Task[object]]:
        return frozenset(self._tasks)

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
