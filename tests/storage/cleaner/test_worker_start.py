"""Starting the cleaner's worker process must not hold up the event loop: ProcessPoolExecutor's
submit() forks a worker through the fork server when one is needed and waits for it, which took
seconds on a loaded machine and let a cluster broker's lease heartbeats lapse."""

from __future__ import annotations

import asyncio
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
