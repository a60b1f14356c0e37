"""Starting the cleaner's worker process must not hold up the event loop: ProcessPoolExecutor's
submit() forks a worker through the fork server when one is needed and waits for it, which took
seconds on a loaded machine and let a cluster broker's lease heartbeats lapse."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from storage.cleaner.log_cleaner import CleanerConfig, CleanerService


class SlowToStart(ThreadPoolExecutor):
    """submit() blocks as a worker's start does; records when it returned."""

    submitted_at = 0.0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        time.sleep(0.3)
        SlowToStart.submitted_at = time.monotonic()
        return super().submit(fn, *args, **kwargs)


async def test_the_event_loop_runs_while_a_worker_starts() -> None:
    service = CleanerService(CleanerConfig(), executor=lambda: SlowToStart(1))
    ticked_at: list[float] = []

    async def tick() -> None:
        await asyncio.sleep(0.01)
        ticked_at.append(time.monotonic())

    ticker = asyncio.get_running_loop().create_task(tick())
    assert await service.in_worker(abs, -3) == 3
    await ticker
    assert ticked_at[0] < SlowToStart.submitted_at  # the loop went on during the blocked submit


class StartingWorker(ThreadPoolExecutor):
    """submit() holds the executor's lock while its worker starts, as ProcessPoolExecutor's does
    (the fork server forking it), until the test lets it finish."""

    def __init__(self) -> None:
        super().__init__(1)
        self.starting = threading.Event()
        self.started = threading.Event()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._shutdown_lock:
            self.starting.set()
            self.started.wait()
        return super().submit(fn, *args, **kwargs)


class OnePass(CleanerService):
    async def clean_dirtiest(self) -> None:
        await self.in_worker(abs, -3)
        await asyncio.Event().wait()


async def test_a_cleaner_stops_while_its_worker_is_still_starting() -> None:
    """The broker stopping does not block its event loop on the executor's lock, and waits for a
    worker's start only a few seconds; the executor is shut down once the start is done (a 20 s
    shutdown hang, the broker SIGKILLed, was this)."""
    executor = StartingWorker()
    service = OnePass(CleanerConfig(), executor=lambda: executor)
    service.start()
    await asyncio.to_thread(executor.starting.wait)
    await service.stop()
    assert not executor.started.is_set() and not executor._shutdown  # stopped while it started
    executor.started.set()
    for thread in [t for t in threading.enumerate() if t.name == "cleaner-executor"]:  # submit's, stop's
        await asyncio.to_thread(thread.join)
    assert executor._shutdown  # by the cleaner's stop, once the start was done
