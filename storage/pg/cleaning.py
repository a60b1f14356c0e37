"""Log compaction in cluster mode, the leader's side: what a partition may clean now (Kafka's
LogCleanerManager over rows of `batches` instead of segment files).

Rows have no segments, so the "active segment" Kafka never cleans is a closed-range rule over the
rows (docs/cluster.md): the newest rows holding at most segment.bytes, unless older than
segment.ms, are the active range; the newest batch always is. The cleanable section runs from the
first dirty offset (partitions.cleaner_checkpoint, where the last committed pass ended) to the
first uncleanable offset: the lowest of the active range's start, the last stable offset (an open
transaction is never cleaned) and the first row newer than min.compaction.lag.ms. A partition is
cleaned when the dirty share of [log start, first uncleanable) reaches min.cleanable.dirty.ratio,
or when its first dirty batch has waited longer than max.compaction.lag.ms.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

from protocol.record_batch import RecordBatchHeader

from ..api import AbortedTxn
from ..log_config import LogConfig
from .partition_store import PartitionStore

__all__ = ("CleaningState", "PgCleanTask", "PgCleaningPlan", "dirty_bytes", "plan_cleaning")

_NEVER: Final = (1 << 63) - 1


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
    config: LogConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class PgCleanTask:
    """One pass, as plain data for the worker process (storage/pg/clean_rows.py)."""

    url: str
    topic_id: uuid.UUID
    partition: int
    node_id: int
    leader_epoch: int
    log_start_offset: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    aborted: tuple[AbortedTxn, ...]
    active_producers: dict[int, tuple[int, int]]
    delete_retention_ms: int
    map_capacity: int
    now_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PgCleaningPlan:
    task: PgCleanTask
    dirty_ratio: float
    forced: bool  # max.compaction.lag.ms passed


_ACTIVE: Final = """
SELECT
  (SELECT min(base_offset) FROM (SELECT base_offset, sum(octet_length(data)) OVER (ORDER BY base_offset DESC) AS s
     FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $3) x WHERE s <= $4) AS by_size,
  (SELECT max(base_offset) FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $3) AS newest,
  (SELECT max(last_offset) + 1 FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $3
     AND max_timestamp <= $5) AS aged_until
"""
_BYTES: Final = """
SELECT coalesce(sum(octet_length(data)) FILTER (WHERE base_offset < $3), 0) AS clean,
       coalesce(sum(octet_length(data)) FILTER (WHERE base_offset >= $3), 0) AS dirty
FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $4
"""


async def active_range_start(pool: Any, store: PartitionStore, state: CleaningState, now_ms: int) -> int:
    """Where the active range begins: rows from here on are never cleaned."""
    config = state.config
    aged = now_ms - config.segment_ms if config.segment_ms < now_ms else -_NEVER
    row = await pool.fetchrow(_ACTIVE, store.topic_id, store.partition, state.high_watermark,
                              config.segment_bytes, aged)
    newest = row["newest"]
    if newest is None:
        return state.high_watermark
    start = newest if row["by_size"] is None else min(row["by_size"], newest)
    if row["aged_until"] is not None:  # rows older than segment.ms are in closed ranges
        start = max(start, min(row["aged_until"], newest))
    return int(start)


async def first_uncleanable_offset(pool: Any, store: PartitionStore, state: CleaningState, now_ms: int) -> int:
    bound = min(await active_range_start(pool, store, state, now_ms), state.last_stable_offset)
    lag = state.config.min_compaction_lag_ms
    if lag > 0:
        recent = await pool.fetchval(
            "SELECT min(base_offset) FROM batches WHERE topic_id = $1 AND partition = $2 AND base_offset < $3 "
            "AND max_timestamp > $4", store.topic_id, store.partition, bound, now_ms - lag)
        if recent is not None:
            bound = min(bound, recent)
    return bound


async def dirty_bytes(db: Any, topic_id: uuid.UUID, partition: int, first_dirty: int,
                      first_uncleanable: int) -> tuple[int, int]:
    """(clean bytes, dirty bytes) below first_uncleanable; db is a pool or a connection."""
    row = await db.fetchrow(_BYTES, topic_id, partition, first_dirty, first_uncleanable)
    return int(row["clean"]), int(row["dirty"])


async def _overdue(pool: Any, store: PartitionStore, config: LogConfig, first_dirty: int, now_ms: int) -> bool:
    """max.compaction.lag.ms: the first dirty batch has waited too long (only when set: Kafka's
    default never forces a pass)."""
    lag = config.max_compaction_lag_ms
    if lag >= now_ms:
        return False
    head = await pool.fetchval(
        "SELECT substring(data FROM 1 FOR 61) FROM batches WHERE topic_id = $1 AND partition = $2 "
        "AND base_offset >= $3 ORDER BY base_offset LIMIT 1", store.topic_id, store.partition, first_dirty)
    return head is not None and 0 <= RecordBatchHeader.parse(head).base_timestamp < now_ms - lag


async def plan_cleaning(store: PartitionStore, state: CleaningState, *, url: str, node_id: int, now_ms: int,
                        map_capacity: int) -> PgCleaningPlan | None:
    """A pass over the cleanable section, or None if nothing is due."""
    pool = store.pool
    first_dirty = max(state.first_dirty_offset, state.log_start_offset)
    first_uncleanable = await first_uncleanable_offset(pool, store, state, now_ms)
    if first_uncleanable <= first_dirty:
        return None
    clean, dirty = await dirty_bytes(pool, store.topic_id, store.partition, first_dirty, first_uncleanable)
    if dirty == 0:
        return None
    ratio = dirty / (clean + dirty)
    config = state.config
    forced = ratio < config.min_cleanable_dirty_ratio and await _overdue(pool, store, config, first_dirty, now_ms)
    if ratio < config.min_cleanable_dirty_ratio and not forced:
        return None
    task = PgCleanTask(
        url=url, topic_id=store.topic_id, partition=store.partition, node_id=node_id,
        leader_epoch=state.leader_epoch, log_start_offset=state.log_start_offset, first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        aborted=tuple(a for a in state.aborted if a.first_offset < first_uncleanable),
        active_producers=state.producers, delete_retention_ms=config.delete_retention_ms,
        map_capacity=map_capacity, now_ms=now_ms)
    return PgCleaningPlan(task=task, dirty_ratio=ratio, forced=forced)
