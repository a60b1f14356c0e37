"""What a partition log can clean now, and taking a pass's result in: the owner task's side.

Kafka's LogCleanerManager: the cleanable section runs from the first dirty offset (where the last
pass ended) to the first uncleanable offset, the lowest of the active segment's base, the last
stable offset (an open transaction is never cleaned) and the first segment holding records newer
than min.compaction.lag.ms. A log is cleaned when the dirty share of [log start, first
uncleanable) reaches min.cleanable.dirty.ratio, or when its oldest dirty record has waited longer
than max.compaction.lag.ms.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..log_segment import LogSegment
from ..transaction_index import TransactionIndexFile
from . import swap
from .clean_pass import CleanedGroup, CleanResult, CleanTask, SegmentInfo

if TYPE_CHECKING:
    from ..partition_log import LocalPartitionLog

__all__ = ("CHECKPOINT", "CleaningPlan", "plan_cleaning", "read_checkpoint", "swap_in")

log = logging.getLogger(__name__)
# Kafka keeps one cleaner-offset-checkpoint per log dir; here each partition keeps its own.
CHECKPOINT: Final = "cleaner-offset-checkpoint"


@dataclass(frozen=True, slots=True, kw_only=True)
class CleaningPlan:
    task: CleanTask
    dirty_ratio: float
    forced: bool  # max.compaction.lag.ms passed


def read_checkpoint(directory: Path) -> int:
    try:
        return int((directory / CHECKPOINT).read_text().strip())
    except (OSError, ValueError):
        return 0


def first_uncleanable_offset(plog: LocalPartitionLog, now_ms: int) -> int:
    bound = min(plog.active.base_offset, plog.last_stable_offset)
    lag = plog.config.min_compaction_lag_ms
    if lag > 0:
        for seg in plog.segments[:-1]:
            if seg.max_timestamp > now_ms - lag:
                return min(bound, seg.base_offset)
    return bound


def dirty_ratio(segments: list[LogSegment], first_dirty: int, first_uncleanable: int) -> tuple[int, int]:
    """(clean bytes, dirty bytes) of the closed segments below first_uncleanable."""
    clean = dirty = 0
    for seg, following in zip(segments, segments[1:], strict=False):
        if following.base_offset > first_uncleanable:
            break
        if following.base_offset <= first_dirty:
            clean += seg.size
        else:
            dirty += seg.size
    return clean, dirty


def dirty_ratio_now(plog: LocalPartitionLog) -> float:
    """The share of the closed segments' bytes that is dirty (the ratio a pass is logged with)."""
    first_uncleanable = first_uncleanable_offset(plog, int(time.time() * 1000))
    clean, dirty = dirty_ratio(plog.segments, max(plog.first_dirty_offset, plog.log_start_offset), first_uncleanable)
    return dirty / (clean + dirty) if clean + dirty else 0.0


def _overdue(plog: LocalPartitionLog, closed: list[LogSegment], first_dirty: int, now_ms: int) -> bool:
    """max.compaction.lag.ms: the oldest dirty record has waited too long (one batch header read,
    and only when the lag is set: Kafka's default, Long.MAX_VALUE, never forces a pass)."""
    lag = plog.config.max_compaction_lag_ms
    if lag >= now_ms:
        return False
    seg = next((s for s in closed if s.next_offset > first_dirty), None)
    loc = None if seg is None else seg.find(first_dirty)
    return loc is not None and 0 <= loc.header.base_timestamp < now_ms - lag


def plan_cleaning(plog: LocalPartitionLog, now_ms: int, map_capacity: int) -> CleaningPlan | None:
    """In the owner task: a pass over the cleanable section, or None if nothing is due."""
    first_dirty = max(plog.first_dirty_offset, plog.log_start_offset)
    first_uncleanable = first_uncleanable_offset(plog, now_ms)
    if first_uncleanable <= first_dirty:
        return None
    clean, dirty = dirty_ratio(plog.segments, first_dirty, first_uncleanable)
    if dirty == 0:
        return None
    ratio = dirty / (clean + dirty)
    closed = [s for s in plog.segments[:-1] if s.base_offset < first_uncleanable]
    # Kafka cleans a log whose ratio is above min.cleanable.dirty.ratio, not at it: 1.0 means
    # "only when max.compaction.lag.ms forces it", even for a log that is all dirty.
    below = ratio <= plog.config.min_cleanable_dirty_ratio
    forced = below and _overdue(plog, closed, first_dirty, now_ms)
    if below and not forced:
        return None
    bounds = [s.base_offset for s in plog.segments]
    infos = tuple(SegmentInfo(base_offset=s.base_offset, end_offset=bounds[i + 1], size=s.size,
                              mtime_ns=os.stat(s.log_path).st_mtime_ns)
                  for i, s in enumerate(closed))
    producers = {pid: (e.last_data_offset, e.producer_epoch) for pid, e in plog.txns.state.producers.items()}
    task = CleanTask(
        directory=str(plog.directory), segments=infos, first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        aborted=tuple(plog.txns.collect_aborted(plog.log_start_offset, first_uncleanable)),
        active_producers=producers, segment_bytes=plog.config.segment_bytes,
        index_interval_bytes=plog.config.index_interval_bytes, delete_retention_ms=plog.config.delete_retention_ms,
        map_capacity=map_capacity, now_ms=now_ms,
    )
    return CleaningPlan(task=task, dirty_ratio=ratio, forced=forced)


def _still_there(plog: LocalPartitionLog, group: CleanedGroup) -> list[int] | None:
    """Indexes in plog.segments of the group's old segments, if all are still closed segments."""
    bases = [s.base_offset for s in plog.segments[:-1]]
    try:
        at = [bases.index(b) for b in group.replaces]
    except ValueError:
        return None
    return at if at == list(range(at[0], at[0] + len(at))) else None


async def swap_in(plog: LocalPartitionLog, result: CleanResult) -> int:
    """In the owner task, alone: replace the old segments by the cleaned ones; returns how many
    groups were swapped. Segments removed meanwhile (retention, DeleteRecords) void their group."""
    groups = [g for g in result.groups if _still_there(plog, g) is not None]
    if len(groups) != len(result.groups):
        log.info("%s: segments changed during cleaning; %d of %d cleaned segments dropped", plog.tp,
                 len(result.groups) - len(groups), len(result.groups))
    if not groups:
        await asyncio.to_thread(swap.discard_tmp, plog.directory)
        return 0
    old = {b for g in groups for b in g.replaces}
    closing = [s for s in plog.segments if s.base_offset in old]
    try:
        opened = await asyncio.to_thread(_swap_files, plog, groups, closing)
    except OSError as exc:
        # The manifest may be written: the next start finishes the swap. Until then this log's
        # files are not what memory says, so it goes offline (as Kafka takes a log dir offline).
        raise plog.go_offline(f"swapping in cleaned segments failed: {exc}") from exc
    _replace_in_memory(plog, groups, opened)
    plog.first_dirty_offset = result.end_offset
    try:
        await asyncio.to_thread(plog.fs.write_atomically, plog.directory / CHECKPOINT, str(result.end_offset).encode())
    except OSError as exc:
        log.warning("%s: cannot write the cleaner checkpoint (the next pass rescans): %s", plog.tp, exc)
    return len(groups)


def _swap_files(plog: LocalPartitionLog, groups: list[CleanedGroup],
                closing: list[LogSegment]) -> list[tuple[LogSegment, TransactionIndexFile]]:
    for seg in closing:
        seg.close()
    for ix in plog.txns.indexes:
        if ix.index.base_offset in {s.base_offset for s in closing}:
            ix.close()
    swap.commit_swap(plog.directory, groups, plog.fs)
    opened = []
    for g in groups:
        seg = LogSegment(plog.directory, g.base_offset, plog.config.index_interval_bytes, plog.fs)
        seg.load(recover=False)
        opened.append((seg, TransactionIndexFile.open(plog.directory, g.base_offset, plog.fs)))
    return opened


def _replace_in_memory(plog: LocalPartitionLog, groups: list[CleanedGroup],
                       opened: list[tuple[LogSegment, TransactionIndexFile]]) -> None:
    new = {g.base_offset: pair for g, pair in zip(groups, opened, strict=True)}
    gone = {b for g in groups for b in g.replaces}
    segments, indexes = [], []
    for seg, ix in zip(plog.segments, plog.txns.indexes, strict=True):
        if seg.base_offset in new:
            segments.append(new[seg.base_offset][0])
            indexes.append(new[seg.base_offset][1])
        elif seg.base_offset not in gone:
            segments.append(seg)
            indexes.append(ix)
    plog.segments[:] = segments
    plog.txns.indexes[:] = indexes

