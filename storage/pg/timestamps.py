"""ListOffsets by timestamp over stored batches: the batch is found by its max_timestamp column,
then its records are searched (the one decode Kafka does here too; storage/segment_reads.py)."""

from __future__ import annotations

import operator
from functools import partial

from protocol.record_batch import RecordBatchHeader

from ..segment_reads import first_record
from .partition_store import PartitionStore

__all__ = ("max_timestamp_offset", "offset_for_timestamp")


async def offset_for_timestamp(
    store: PartitionStore, timestamp: int, log_start_offset: int, high_watermark: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after the log start whose timestamp is >=
    timestamp; None if there is none below the high watermark."""
    async for data in store.batches_by_timestamp(timestamp, log_start_offset, high_watermark):
        found = first_record(data, RecordBatchHeader.parse(data), log_start_offset, partial(operator.le, timestamp))
        if found is not None:
            return found
    return None


async def max_timestamp_offset(store: PartitionStore, high_watermark: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with the largest timestamp (ListOffsets -3)."""
    data = await store.batch_with_max_timestamp(high_watermark)
    if data is None:
        return None
    header = RecordBatchHeader.parse(data)
    return first_record(data, header, 0, partial(operator.eq, header.max_timestamp))
