"""The log cleaner of cluster mode: this broker cleans the compacted partitions it leads.

As the local LogCleaner (storage/cleaner/log_cleaner.py, whose worker process, stats and log line
it shares): one partition at a time, the dirtiest first, sleeping log.cleaner.backoff.ms when none
is due. The partition's owner task only hands over what it knows (storage/pg/cleaning.py); the
pass reads, decodes and commits in the worker process (storage/pg/clean_rows.py), fenced by the
leader epoch, and the log then drops what it holds of the cleaned range.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor

from protocol.errors import KafkaError

from ..cleaner.clean_pass import BYTES_PER_MAP_ENTRY
from ..cleaner.log_cleaner import CleanerStats, PassStats, log_pass, process_executor, stop_executor
from .clean_rows import PgCleanResult, run_pg_clean_pass
from .cleaning import PgCleaningPlan
from .log_source import PgLogSource
from .partition_log import PgPartitionLog

__all__ = ("PgLogCleaner",)

log = logging.getLogger(__name__)


class PgLogCleaner:
    def __init__(self, source: PgLogSource, url: str, *, backoff_ms: int, dedupe_buffer_size: int,
                 executor: Callable[[], Executor] = process_executor) -> None:
        self.source = source
        self.url = url
        self.backoff_ms = backoff_ms
        self.map_capacity = max(dedupe_buffer_size // BYTES_PER_MAP_ENTRY, 1)
        self.stats = CleanerStats()
        self._make_executor = executor
        self._executor: Executor | None = None
        self._task: asyncio.Task[None] | None = None
        self.uncleanable: set[str] = set()  # as Kafka's: a pass that failed is not retried until restart

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="pg-log-cleaner")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._executor is not None:  # a pass in flight rolls back with its connection
            stop_executor(self._executor)

    async def _run(self) -> None:
        while True:
            try:
                cleaned = await self.clean_dirtiest()
            except Exception:
                self.stats.failures += 1
                log.exception("log cleaner pass failed; retrying after log.cleaner.backoff.ms")
                cleaned = None
            if cleaned is None:
                await asyncio.sleep(self.backoff_ms / 1000)

    async def _dirtiest(self, now_ms: int) -> tuple[PgPartitionLog, PgCleaningPlan] | None:
        best: tuple[PgPartitionLog, PgCleaningPlan] | None = None
        for plog in list(self.source.logs.values()):
            if "compact" not in plog.config.cleanup_policy.split(",") or str(plog.tp) in self.uncleanable:
                continue
            try:
                plan = await plog.plan_cleaning(self.url, self.source.node_id, now_ms, self.map_capacity)
            except KafkaError:  # no longer led here, or the database is away: the next round sees
                continue
            if plan is not None and (best is None or (plan.forced, plan.dirty_ratio) >
                                     (best[1].forced, best[1].dirty_ratio)):
                best = (plog, plan)
        return best

    async def clean_dirtiest(self) -> PassStats | None:
        """One pass over the partition most in need; None if none is due or the pass did not commit."""
        found = await self._dirtiest(int(time.time() * 1000))
        if found is None:
            return None
        plog, plan = found
        task = plan.task
        log.info("cleaning %s: offsets %d to %d, dirty ratio %.3f%s", plog.tp, task.first_dirty_offset,
                 task.first_uncleanable_offset, plan.dirty_ratio,
                 " (max.compaction.lag.ms passed)" if plan.forced else "")
        started = time.monotonic()
        try:
            result = await self._clean(plan)
        except Exception:
            self.stats.failures += 1
            self.uncleanable.add(str(plog.tp))
            log.exception("cleaning %s failed; it is not cleaned again until the broker restarts", plog.tp)
            return None
        if not result.committed:
            log.info("cleaning %s not committed: this broker no longer leads it at epoch %d (or no producer "
                     "snapshot covers the range yet)", plog.tp, task.leader_epoch)
            return None
        try:
            await plog.cleaned(result)
        except KafkaError as exc:  # closed meanwhile: the next leader loads the cleaned rows
            log.info("%s closed after cleaning: %s", plog.tp, exc)
            return None
        stats = PassStats(partition=str(plog.tp), bytes_read=result.bytes_read, bytes_written=result.bytes_written,
                          dirty_ratio_before=plan.dirty_ratio, dirty_ratio_after=result.dirty_ratio_after,
                          seconds=time.monotonic() - started)
        log_pass(self.stats, stats)
        log.info("cleaned %s: %d rows read, %d deleted, %d rewritten; transaction %.1f ms, partition row "
                 "locked %.1f ms", plog.tp, result.rows_read, result.rows_deleted, result.rows_rewritten,
                 result.write_ms, result.lock_ms)
        return stats

    async def _clean(self, plan: PgCleaningPlan) -> PgCleanResult:
        if self._executor is None:
            self._executor = self._make_executor()
        return await asyncio.get_running_loop().run_in_executor(self._executor, run_pg_clean_pass, plan.task)
