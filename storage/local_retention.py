"""DeleteRecords and retention of a local partition log (run by its owner task): move the log
start offset, checkpoint it, and delete the segments wholly below it (storage/log_retention.py
decides which)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError

from .log_retention import deletable_segments
from .log_segment import LogSegment
from .log_start_offset import write_log_start_offset
from .topic_checks import delete_records_target

if TYPE_CHECKING:
    from .partition_log import LocalPartitionLog

__all__ = ("delete_records_before", "enforce_retention")

log = logging.getLogger(__name__)


async def delete_records_before(plog: LocalPartitionLog, offset: int) -> int:
    """Move the log start offset up to offset (-1: the high watermark), durably; the new one."""
    target = delete_records_target(plog.tp, plog.config, offset, plog.high_watermark)
    if target > plog.log_start_offset:
        tp = plog.tp
        try:
            await asyncio.to_thread(write_log_start_offset, plog.directory, tp.topic, tp.partition, target, plog.fs)
        except OSError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error,
                             f"cannot checkpoint the log start offset of {tp}: {exc}") from exc
        plog.log_start_offset = target
        await _delete_segments(plog, deletable_segments(plog.segments, plog.config, 0, target, retention=False))
    return plog.log_start_offset


async def enforce_retention(plog: LocalPartitionLog, now_ms: int) -> int:
    """Delete whole non-active segments past retention.ms or retention.bytes; count deleted."""
    plog.txns.remove_expired_producers(now_ms)
    count = deletable_segments(plog.segments, plog.config, now_ms, plog.log_start_offset, retention=True)
    await _delete_segments(plog, count)
    return count


async def _delete_segments(plog: LocalPartitionLog, count: int) -> None:
    gone = []
    for _ in range(count):
        seg = plog.segments.pop(0)
        # Retention moves the start to the first kept segment; DeleteRecords may be past it.
        plog.log_start_offset = max(plog.log_start_offset, plog.segments[0].base_offset)
        plog.txns.on_delete_segment(seg.base_offset)
        gone.append(seg)
    if not gone:
        return
    try:
        await asyncio.to_thread(_delete_all, gone)
    except OSError as exc:
        log.warning("%s: deleting old segment files failed (they are no longer used): %s", plog.tp, exc)
    for seg in gone:
        log.info("%s: deleted segment %d; log start offset %d", plog.tp, seg.base_offset, plog.log_start_offset)


def _delete_all(segments: list[LogSegment]) -> None:
    for seg in segments:
        seg.delete()
