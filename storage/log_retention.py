"""Which old segments a partition log may delete: pure decisions over segment metadata.

A segment goes when every offset in it is below the log start offset (DeleteRecords moved it),
when it is older than retention.ms (aged by its largest record timestamp, or the file's mtime,
as Kafka does), or while the log without it still exceeds retention.bytes. The active (last)
segment is never deleted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .log_config import LogConfig
from .log_segment import LogSegment

__all__ = ("deletable_segments",)


def deletable_segments(
    segments: Sequence[LogSegment], config: LogConfig, now_ms: int, log_start_offset: int, retention: bool
) -> int:
    """How many leading segments to delete. retention=False considers the log start offset only."""
    total = sum(s.size for s in segments)
    count = 0
    while count < len(segments) - 1:
        seg, following = segments[count], segments[count + 1]
        below_start = following.base_offset <= log_start_offset
        expired = retention and 0 <= config.retention_ms < now_ms - segment_time(seg)
        oversize = retention and 0 <= config.retention_bytes <= total - seg.size  # Kafka: diff - size >= 0
        if not (below_start or expired or oversize):
            break
        total -= seg.size
        count += 1
    return count


def segment_time(seg: LogSegment) -> int:
    return seg.max_timestamp if seg.max_timestamp > 0 else int(os.stat(seg.log_path).st_mtime * 1000)
