"""Log compaction in cluster mode, the leader's side: what a partition may clean now (Kafka's
LogCleanerManager over rows of `batches` instead of segment files).

Rows have no segments, so the "active segment" Kafka never cleans is an active range the leader
keeps as Kafka rolls segments (ActiveRange): it starts where the leader took the partition (a new
leader closes what came before) and rolls, at the append that would take it past segment.bytes or
that comes segment.ms after the range's first append, to start at that append. The cleanable
section runs from the first dirty offset (partitions.cleaner_checkpoint, where the last committed pass ended) to the
first uncleanable offset: the lowest of the active range's start, the last stable offset (an open
transaction is never cleaned) and the first row newer than min.compaction.lag.ms. A partition is
cleaned when the dirty share of [log start, first uncleanable) reaches min.cleanable.dirty.ratio,
or when its first dirty batch has waited longer than max.compaction.lag.ms.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from protocol.record_batch import RecordBatchHeader

from ..api import AbortedTxn
from ..cleaner.clean_pass import CleanRules
from ..log_config import LogConfig
from ..object_store import ObjectStoreSettings
from .partition_store import PartitionStore
from .pool import Pool, Queries

__all__ = ("ActiveRange", "CleaningState", "PgCleanTask", "PgCleaningPlan", "dirty_bytes", "plan_cleaning")

@dataclass(frozen=True, slots=True, kw_only=True)
class CleaningState:
    """What the partition log's owner task knows (taken inside it, in one step)."""

    leader_epoch: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    first_dirty_offset: int
    # producer id -> (last data offset or -1, producer epoch), of producers the log still tracks
    producers: dict[int, tuple[int, int]]
    aborted: tuple[AbortedTxn, ...]
    active_start: int
    config: LogConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class PgCleanTask(CleanRules):
    """One pass, as plain data for the worker process (storage/pg/clean_rows.py)."""

    url: str
    topic_id: uuid.UUID
    partition: int
    node_id: int
    leader_epoch: int
    log_start_offset: int
    # The object store of object-stored data (storage/pg/object_clean.py cleans its runs into objects
    # of up to object_bytes, cluster.object.archive.bytes); None: rows.
    objects: ObjectStoreSettings | None = None
    object_bytes: int = 64 << 20
    # cluster.lease.ms in seconds: how long the worker waits for its connection (None: asyncpg's 60 s)
    lease_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PgCleaningPlan:
    task: PgCleanTask
    dirty_ratio: float
    forced: bool  # max.compaction.lag.ms passed


# Rows of `batches` (a batch each: on one side of the checkpoint).
_BYTES: Final = """
SELECT coalesce(sum(octet_length(data)) FILTER (WHERE base_offset < $3), 0) AS clean,
       coalesce(sum(octet_length(data)) FILTER (WHERE base_offset >= $3), 0) AS dirty
FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $4
"""
# Runs of `batch_runs` (object-stored data) may hold offsets on both sides of the checkpoint or of the
# first uncleanable offset (an archive made before archiving kept to one side, a pass's output, which
# carries the batches past its section as they are): a run's bytes are split in proportion to its offsets.
_RUN_BYTES: Final = """
SELECT coalesce(sum(byte_length::bigint * greatest(least(last_offset + 1, $3) - base_offset, 0)
                    / (last_offset - base_offset + 1)), 0) AS clean,
       coalesce(sum(byte_length::bigint * greatest(least(last_offset + 1, $4) - greatest(base_offset, $3), 0)
                    / (last_offset - base_offset + 1)), 0) AS dirty
FROM batch_runs WHERE topic_id = $1 AND partition = $2 AND base_offset < $4
"""


class ActiveRange:
    """The newest rows, never cleaned: Kafka's active segment (in the leader's memory)."""

    def __init__(self, start: int) -> None:
        self.start = start
        self._bytes = 0
        self._since_ms = 0

    def on_commit(self, first_offset: int, size: int, now_ms: int, config: LogConfig) -> None:
        """Rows of size bytes from first_offset on were committed: roll first if Kafka would."""
        if self._bytes and (self._bytes + size > config.segment_bytes or now_ms - self._since_ms >= config.segment_ms):
            self.start, self._bytes = first_offset, 0
        if not self._bytes:
            self._since_ms = now_ms
        self._bytes += size


async def first_uncleanable_offset(pool: Pool, store: PartitionStore, state: CleaningState, now_ms: int) -> int:
    bound = min(state.active_start, state.last_stable_offset)
    lag = state.config.min_compaction_lag_ms
    if lag > 0:
        recent = await pool.fetchval(
            f"SELECT min(base_offset) FROM {store.table} WHERE topic_id = $1 AND partition = $2 "
            "AND base_offset < $3 AND max_timestamp > $4", store.topic_id, store.partition, bound, now_ms - lag)
        if recent is not None:
            bound = min(bound, recent)
    return bound


async def dirty_bytes(db: Queries, topic_id: uuid.UUID, partition: int, first_dirty: int,
                      first_uncleanable: int, *, objects: bool = False) -> tuple[int, int]:
    """(clean bytes, dirty bytes) below first_uncleanable; db is a pool or a connection."""
    row = await db.fetchrow(_RUN_BYTES if objects else _BYTES, topic_id, partition, first_dirty, first_uncleanable)
    assert row is not None  # a SELECT of aggregates answers one row
    return int(row["clean"]), int(row["dirty"])


async def _overdue(pool: Pool, store: PartitionStore, config: LogConfig, first_dirty: int, now_ms: int) -> bool:
    """max.compaction.lag.ms: the first dirty batch has waited too long (only when set: Kafka's
    default never forces a pass)."""
    lag = config.max_compaction_lag_ms
    if lag >= now_ms:
        return False
    head = await store.first_header(first_dirty)
    return head is not None and 0 <= RecordBatchHeader.parse(head).base_timestamp < now_ms - lag


async def plan_cleaning(store: PartitionStore, state: CleaningState, *, url: str, node_id: int, now_ms: int,
                        map_capacity: int) -> PgCleaningPlan | None:
    """A pass over the cleanable section, or None if nothing is due."""
    pool = store.pool
    first_dirty = max(state.first_dirty_offset, state.log_start_offset)
    first_uncleanable = await first_uncleanable_offset(pool, store, state, now_ms)
    if first_uncleanable <= first_dirty:
        return None
    clean, dirty = await dirty_bytes(pool, store.topic_id, store.partition, first_dirty, first_uncleanable,
                                     objects=store.table == "batch_runs")
    if dirty == 0:
        return None
    ratio = dirty / (clean + dirty)
    config = state.config
    below = ratio <= config.min_cleanable_dirty_ratio  # as the local cleaner: above the ratio, not at it
    forced = below and await _overdue(pool, store, config, first_dirty, now_ms)
    if below and not forced:
        return None
    task = PgCleanTask(
        url=url, topic_id=store.topic_id, partition=store.partition, node_id=node_id,
        leader_epoch=state.leader_epoch, log_start_offset=state.log_start_offset, first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        aborted=tuple(a for a in state.aborted if a.first_offset < first_uncleanable),
        active_producers=state.producers, delete_retention_ms=config.delete_retention_ms,
        map_capacity=map_capacity, now_ms=now_ms)
    return PgCleaningPlan(task=task, dirty_ratio=ratio, forced=forced)
