"""A share group's share.* configs in force, and where a share-partition starts by
share.auto.offset.reset (Kafka's SharePartition.startOffsetDuringInitialization)."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Final

from storage.api import IsolationLevel, PartitionLog

__all__ = ("ShareGroupSettings", "by_duration_ms", "initial_offset")

_DURATION: Final = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupSettings:
    """A share group's share.* configs in force (its own, else the broker's)."""

    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    auto_offset_reset: str = "latest"
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    # the dead-letter topic while share.version is 2, else "" (KIP-1191), and whether dead letters
    # carry the record's key and value
    dlq_topic: str = ""
    dlq_copy_record: bool = False


def by_duration_ms(value: str) -> int:
    """The milliseconds of share.auto.offset.reset's by_duration:<ISO-8601 duration>."""
    match = _DURATION.match(value.removeprefix("by_duration:"))
    if match is None:
        raise ValueError(f"not an ISO-8601 duration: {value}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int(datetime.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds).total_seconds() * 1000)


async def initial_offset(plog: PartitionLog, settings: ShareGroupSettings, now_ms: int) -> int:
    """latest: the high watermark, or the last stable offset under read_committed; earliest: the
    log start offset; by_duration:<ISO-8601>: the first record at or after now minus that duration."""
    reset = settings.auto_offset_reset
    if reset == "earliest":
        return plog.log_start_offset
    if reset.startswith("by_duration:"):
        found = await plog.offset_for_timestamp(now_ms - by_duration_ms(reset))
        return found[0] if found is not None else plog.high_watermark
    committed = settings.isolation_level is IsolationLevel.READ_COMMITTED
    return plog.last_stable_offset if committed else plog.high_watermark
