"""The broker's log cleaner: picks the dirtiest compacted log, cleans it off the event loop.

A pass runs in a worker process, not a thread: cleaning decodes and re-encodes every record in
Python, which would hold the GIL for most of a pass and stall produce and fetch on the event loop
(bench/: `make bench` cleaner case). The partition's owner task only plans the pass (segment
metadata, aborted transactions, active producers) and swaps the result in; between the two the log
serves reads and appends as usual. As Kafka's LogCleaner: log.cleaner.threads workers, each
cleaning one log at a time (never one another is cleaning), the dirtiest first, sleeping
log.cleaner.backoff.ms when nothing is due; the dedupe buffer, the I/O buffers and the I/O rate
are shared out among them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from protocol.errors import KafkaError

from ..api import CleanerStats, PassStats
from ..log_config import LogConfig
from .clean_pass import BYTES_PER_MAP_ENTRY, CleanResult, CleanTask, run_clean_pass, watch_broker
from .cleanable import CleaningPlan
from .throttler import UNLIMITED

if TYPE_CHECKING:
    from ..partition_log import LocalPartitionLog
    from ..partition_logs import PartitionLogs

__all__ = ("CleanerConfig", "CleanerService", "CleanerStats", "LogCleaner", "PassStats", "log_pass", "process_executor",
           "stop_executor")

log = logging.getLogger(__name__)
T = TypeVar("T")
_STOP_WAIT_S = 2.0  # stopping the worker takes milliseconds unless it is still starting
R = TypeVar("R")


class _Plan(Protocol):
    @property
    def forced(self) -> bool: ...
    @property
    def dirty_ratio(self) -> float: ...


class _Log(Protocol):
    @property
    def tp(self) -> object: ...
    @property
    def config(self) -> LogConfig: ...


L = TypeVar("L", bound=_Log)
P = TypeVar("P", bound=_Plan)


def process_executor(workers: int = 1) -> Executor:
    # forkserver: workers are forked from a clean server process, never from the broker with its
    # event loop and threads; the worker ends with the broker (the server watches its parent).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["storage.cleaner.clean_pass"])
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=watch_broker,
                               initargs=(os.getpid(),))


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanerConfig:
    """Kafka's CleanerConfig (log.cleaner.*), as the broker configures it."""

    threads: int = 1
    backoff_ms: int = 15_000
    dedupe_buffer_size: int = 128 << 20
    dedupe_buffer_load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor
    io_buffer_size: int = 512 << 10
    io_max_bytes_per_second: float = UNLIMITED

    @property
    def map_capacity(self) -> int:
        """Keys one worker's map holds: its share of the dedupe buffer, as full as the load factor."""
        share = self.dedupe_buffer_size // max(self.threads, 1) * self.dedupe_buffer_load_factor
        return max(int(share) // BYTES_PER_MAP_ENTRY, 1)

    def for_worker(self, task: CleanTask) -> CleanTask:
        """task with one worker's share of the I/O buffers (half to read, half to write) and rate."""
        threads = max(self.threads, 1)
        return dataclasses.replace(task, io_buffer_size=self.io_buffer_size // threads // 2,
                                   io_max_bytes_per_second=self.io_max_bytes_per_second / threads)


class CleanerService:
    """The background loop both backends' cleaners share: a pass at a time in the worker, sleeping
    log.cleaner.backoff.ms when none was due; subclasses pick and run the pass."""

    def __init__(self, config: CleanerConfig, *, executor: Callable[[], Executor] | None = None) -> None:
        self.config = config
        self.backoff_ms = config.backoff_ms
        self.map_capacity = config.map_capacity
        self.stats = CleanerStats()
        self._make_executor = executor or functools.partial(process_executor, max(config.threads, 1))
        self._executor: Executor | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # The partition each worker's loop is cleaning (Kafka's inProgress): never two at once.
        self._claims: dict[asyncio.Task[object] | None, str] = {}
        # Kafka's uncleanable partitions: a pass that failed for a reason other than the log
        # changing under it (a corrupt batch, say) is not retried until the broker restarts.
        self.uncleanable: set[str] = set()

    def reconfigure(self, config: CleanerConfig) -> None:
        """New log.cleaner.* settings (dynamic broker configs), from the next pass on. The number of
        workers stays until a restart (Kafka resizes its thread pool; this cleaner's worker
        processes and loops are sized once), so each worker's share keeps that count."""
        self.config = dataclasses.replace(config, threads=self.config.threads)
        self.backoff_ms = self.config.backoff_ms
        self.map_capacity = self.config.map_capacity

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        threads = max(self.config.threads, 1)
        self._tasks = [loop.create_task(self._run(), name=f"log-cleaner-{i}") for i in range(threads)]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._executor is not None:
            # A pass in flight is abandoned (a local one's cleaner-tmp/ is discarded at the next
            # open; a cluster one's transaction rolls back with its connection). Off the event
            # loop: a submit() starting the first worker holds the executor's lock until the fork
            # server has forked it (10 s seen on a loaded machine, the loop blocked on the lock all
            # along). If that takes long, the fork server is killed, which fails the start at once;
            # a broker that exited first would leave the half-started worker to fail loudly.
            stopping = _in_daemon_thread(functools.partial(stop_executor, self._executor))
            if not (await asyncio.wait({stopping}, timeout=_STOP_WAIT_S))[0]:
                _kill_fork_server()
                await asyncio.wait({stopping}, timeout=_STOP_WAIT_S)

    async def _run(self) -> None:
        while True:
            try:
                cleaned = await self.clean_dirtiest()
            except Exception:
                self.stats.failures += 1
                log.exception("log cleaner pass failed; retrying after log.cleaner.backoff.ms")
                cleaned = None
            finally:
                self._claims.pop(asyncio.current_task(), None)
            if cleaned is None:
                await asyncio.sleep(self.backoff_ms / 1000)

    async def clean_dirtiest(self) -> PassStats | None:
        raise NotImplementedError

    async def dirtiest(self, logs: Iterable[L], plan: Callable[[L], Awaitable[P | None]]) -> tuple[L, P] | None:
        """The compacted log most in need of a pass (max.compaction.lag.ms first, then the dirtiest)
        with its plan; None if none is due."""
        me = asyncio.current_task()
        self._claims.pop(me, None)
        due: list[tuple[L, P]] = []
        for plog in logs:
            if "compact" not in plog.config.cleanup_policy.split(",") or str(plog.tp) in self.uncleanable \
                    or str(plog.tp) in self._claims.values():
                continue
            try:
                found = await plan(plog)
            except KafkaError:  # closed, offline or no longer led here meanwhile
                continue
            if found is not None:
                due.append((plog, found))
        # Other workers may have claimed some while this one awaited the plans.
        unclaimed = [d for d in due if str(d[0].tp) not in self._claims.values()]
        if not unclaimed:
            return None
        best = max(unclaimed, key=lambda d: (d[1].forced, d[1].dirty_ratio))
        self._claims[me] = str(best[0].tp)
        return best

    async def in_worker(self, fn: Callable[[T], R], task: T) -> R:
        if self._executor is None:
            self._executor = self._make_executor()
        # submit() starts a worker process when one is needed and waits for the fork server to
        # fork it (importing the preloaded modules first): 0.7 s at load 11, several seconds on a
        # busier machine. Off the event loop, so that nothing else waits (in cluster mode the
        # broker's lease heartbeats lapsed while it did), and off its executor, whose threads the
        # loop joins as it closes: a broker stopping meanwhile does not wait for the worker.
        future = await _in_daemon_thread(functools.partial(self._executor.submit, fn, task))
        return await asyncio.wrap_future(future)


class LogCleaner(CleanerService):
    def __init__(self, logs: PartitionLogs[LocalPartitionLog], config: CleanerConfig, *,
                 executor: Callable[[], Executor] | None = None) -> None:
        super().__init__(config, executor=executor)
        self.logs = logs

    async def _dirtiest(self, now_ms: int) -> tuple[LocalPartitionLog, CleaningPlan] | None:
        return await self.dirtiest(list(self.logs.logs.values()),
                                   lambda plog: plog.plan_cleaning(now_ms, self.map_capacity))

    async def clean_dirtiest(self) -> PassStats | None:
        """One pass over the log most in need; None if no log is due."""
        found = await self._dirtiest(int(time.time() * 1000))
        if found is None:
            return None
        plog, plan = found
        log.info("cleaning %s: offsets %d to %d, dirty ratio %.3f%s", plog.tp, plan.task.first_dirty_offset,
                 plan.task.first_uncleanable_offset, plan.dirty_ratio,
                 " (max.compaction.lag.ms passed)" if plan.forced else "")
        started = time.monotonic()
        try:
            result = await self._clean(self.config.for_worker(plan.task))
        except FileNotFoundError as exc:
            # Retention, DeleteRecords or a topic deletion removed segments meanwhile: nothing was
            # swapped; the next pass starts over from what is there.
            log.info("cleaning %s abandoned, its segments changed meanwhile: %s", plog.tp, exc)
            return None
        except Exception:
            self.stats.failures += 1
            self.uncleanable.add(str(plog.tp))
            log.exception("cleaning %s failed; it is not cleaned again until the broker restarts", plog.tp)
            return None
        try:
            await plog.swap_cleaned(result)
        except KafkaError as exc:  # the log was closed or went offline meanwhile
            log.info("cleaned segments of %s not swapped in: %s", plog.tp, exc)
            return None
        after = await plog.dirty_ratio()
        stats = PassStats(partition=str(plog.tp), bytes_read=result.bytes_read, bytes_written=result.bytes_written,
                          dirty_ratio_before=plan.dirty_ratio, dirty_ratio_after=after,
                          seconds=time.monotonic() - started, throttled_s=result.throttled_s, cpu_s=result.cpu_s)
        log_pass(self.stats, stats)
        return stats

    async def _clean(self, task: CleanTask) -> CleanResult:
        return await self.in_worker(run_clean_pass, task)



def log_pass(stats: CleanerStats, s: PassStats) -> None:
    """Count a pass in stats and log its line (both backends' cleaners)."""
    stats.passes += 1
    stats.bytes_read += s.bytes_read
    stats.bytes_written += s.bytes_written
    stats.seconds += s.seconds
    stats.last = s
    stats.by_partition[s.partition] = s
    mb_s = s.bytes_read / 1e6 / s.seconds if s.seconds > 0 else 0.0
    log.info("cleaned %s: %d bytes read, %d written (%.1f%% of read) in %.3f s (%.1f MB/s%s%s); dirty ratio "
             "%.3f before, %.3f after", s.partition, s.bytes_read, s.bytes_written,
             100 * s.bytes_written / max(s.bytes_read, 1), s.seconds, mb_s,
             f", {s.throttled_s:.3f} s of it throttled" if s.throttled_s else "",
             f", {s.cpu_s:.3f} CPU s" if s.cpu_s else "", s.dirty_ratio_before, s.dirty_ratio_after)


def stop_executor(executor: Executor) -> None:
    """End the worker now rather than let it write on after the logs close. Python 3.11's executor
    has no terminate_workers(), hence its private lock and table of processes. Waits for a submit()
    that is starting a worker (it holds the lock): then that worker is in the table too."""
    with getattr(executor, "_shutdown_lock", None) or contextlib.nullcontext():
        processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()


def _in_daemon_thread(call: Callable[[], R]) -> asyncio.Future[R]:
    """call()'s outcome, from a daemon thread of its own: unlike asyncio.to_thread's, nothing
    joins it, so a process that stops while it blocks does not wait for it."""
    future: concurrent.futures.Future[R] = concurrent.futures.Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(call())
            except BaseException as exc:  # noqa: BLE001  handed to the caller
                future.set_exception(exc)

    threading.Thread(target=run, name="cleaner-executor", daemon=True).start()
    return asyncio.wrap_future(future)


def _kill_fork_server() -> None:
    """Kill the fork server (only the cleaner's workers use one): a worker it is still preparing
    is never forked, and the submit() waiting for it fails at once."""
    pid = getattr(getattr(multiprocessing.forkserver, "_forkserver", None), "_forkserver_pid", None)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
