"""The log cleaner of cluster mode: this broker cleans the compacted partitions it leads.

As the local LogCleaner (storage/cleaner/log_cleaner.py, whose worker process, stats and log line
it shares): one partition at a time, the dirtiest first, sleeping log.cleaner.backoff.ms when none
is due. The partition's owner task only hands over what it knows (storage/pg/cleaning.py); the
pass reads, decodes and commits in the worker process (storage/pg/clean_rows.py), fenced by the
leader epoch, and the log then drops what it holds of the cleaned range.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace

from protocol.errors import CorruptRecordError, KafkaError

from ..cleaner.log_cleaner import CleanerConfig, CleanerService, PassStats, log_pass
from ..object_store import ObjectStoreSettings
from .clean_rows import PgCleanResult, run_pg_clean_pass
from .cleaning import PgCleaningPlan
from .log_source import PgLogSource
from .object_clean import run_object_clean_pass
from .partition_log import PgPartitionLog

__all__ = ("PgLogCleaner",)

log = logging.getLogger(__name__)


class PgLogCleaner(CleanerService):
    def __init__(self, source: PgLogSource, url: str, config: CleanerConfig, *,
                 executor: Callable[[], Executor] | None = None, objects: ObjectStoreSettings | None = None,
                 object_bytes: int = 64 << 20, lease_s: float | None = None) -> None:
        super().__init__(config, executor=executor)
        self.source = source
        self.url = url
        self.objects = objects  # record data in an object store: passes over its runs (object_clean.py)
        self.object_bytes = object_bytes  # cluster.object.archive.bytes: the size of the objects they write
        self.lease_s = lease_s  # bounds the worker's connection (clean_rows.connect)

    async def _dirtiest(self, now_ms: int) -> tuple[PgPartitionLog, PgCleaningPlan] | None:
        return await self.dirtiest(list(self.source.logs.values()), lambda plog: plog.plan_cleaning(
            self.url, now_ms, self.map_capacity))

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
        plog.cleaning = True  # the archiver leaves its runs alone meanwhile (storage/pg/object_archive.py)
        try:
            result = await self._clean(plan)
        except CorruptRecordError:
            self.stats.failures += 1
            self.uncleanable.add(str(plog.tp))
            log.exception("cleaning %s failed; it is not cleaned again until the broker restarts", plog.tp)
            return None
        except Exception as exc:  # the database away or restarting: the transaction rolled back
            self.stats.failures += 1
            log.warning("cleaning %s failed, nothing of the pass was committed; retrying after "
                        "log.cleaner.backoff.ms: %r", plog.tp, exc)
            return None
        finally:
            plog.cleaning = False
        if not result.committed:
            log.info("cleaning %s not committed: %s", plog.tp, result.not_committed or f"this broker no longer "
                     f"leads it at epoch {task.leader_epoch}, or no producer snapshot covers the range yet")
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
        task = replace(plan.task, lease_s=self.lease_s)
        if self.objects is None:
            return await self.in_worker(run_pg_clean_pass, task)
        task = replace(task, objects=self.objects, object_bytes=self.object_bytes)
        return await self.in_worker(run_object_clean_pass, task)
