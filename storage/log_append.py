"""Preparing an append, without I/O: validate the request's batches and lay out the bytes to
write with their assigned offsets. Batches stay bytes: each batch's base offset and partition
leader epoch (both outside the CRC) are given as separate small parts for one writev, so the
request's bytes are never copied or re-encoded (only LogAppendTime stamping copies a batch)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from protocol.control import EndTransactionMarker
from protocol.errors import ErrorCode, KafkaError, RecordValidationError
from protocol.record_batch import LOG_OVERHEAD, RecordBatchHeader, check_batch, iter_batches, stamp_log_append_time

from .api import AppendOrigin, LogAppendInfo, TopicPartition
from .cleaner.batch_filter import keyless_records
from .log_config import LogConfig
from .producer_state import BatchMetadata

__all__ = ("LEADER_EPOCH", "PendingBatch", "PreparedAppend", "duplicate_info", "prepare_append", "validate_batches")

_I64: Final = struct.Struct(">q")
_I32: Final = struct.Struct(">i")
LEADER_EPOCH: Final = 0  # a single node never changes leader


def validate_batches(
    records: bytes | memoryview, origin: AppendOrigin, config: LogConfig, partition: TopicPartition | str
) -> list[tuple[int, RecordBatchHeader]]:
    if not records:
        raise KafkaError(ErrorCode.corrupt_message, "produce request holds no record batch")
    first = check_batch(records, 0, len(records), verify_crc=True)
    headers = [(0, first)]
    if first.size < len(records):  # more than the one batch a producer sends (recovery, markers)
        headers += iter_batches(records, start=first.size)
    for _, header in headers:
        if header.size > config.max_message_bytes:
            raise KafkaError(
                ErrorCode.message_too_large,
                f"record batch of {header.size} bytes exceeds max.message.bytes="
                f"{config.max_message_bytes} of {partition}",
            )
        if origin is AppendOrigin.CLIENT and header.is_control:
            raise KafkaError(ErrorCode.invalid_record, "clients may not write control batches")
    if origin is AppendOrigin.CLIENT and "compact" in config.cleanup_policy.split(","):
        _check_keys(records, headers, partition)
    return headers


def _check_keys(records: bytes | memoryview, headers: list[tuple[int, RecordBatchHeader]],
                partition: TopicPartition | str) -> None:
    """Kafka's LogValidator: every record of a compacted topic needs a key, or the cleaner could
    not keep it. The one check on the produce path that reads records, and only on such topics."""
    for pos, header in headers:
        keyless = keyless_records(records, pos, header)
        if keyless:
            why = f"Compacted topic cannot accept message without key in topic partition {partition}."
            raise RecordValidationError(
                ErrorCode.invalid_record,
                f"{len(keyless)} of {header.records_count} records refused (first: record {keyless[0]}): {why}",
                [(index, why) for index in keyless])


@dataclass(frozen=True, slots=True)
class PendingBatch:
    """A batch of an append: its header and, for a control batch, its end-txn marker."""

    header: RecordBatchHeader
    marker: EndTransactionMarker | None


@dataclass(frozen=True, slots=True)
class PreparedAppend:
    parts: list[bytes | memoryview]  # what one writev writes
    assigned: list[tuple[int, RecordBatchHeader]]  # (position in the write, header with its offset)
    next_offset: int  # one past the last offset assigned


def prepare_append(
    view: memoryview, headers: list[tuple[int, RecordBatchHeader]], base_offset: int, append_time_ms: int | None,
    leader_epoch: int = LEADER_EPOCH,
) -> PreparedAppend:
    """Assign offsets from base_offset; with append_time_ms, stamp LogAppendTime. Each batch
    records the leader epoch it was written under (clients' OffsetForLeaderEpoch checks)."""
    offset = base_offset
    parts: list[bytes | memoryview] = []
    assigned: list[tuple[int, RecordBatchHeader]] = []
    for pos, header in headers:
        end = pos + header.size
        parts += (_I64.pack(offset), view[pos + 8 : pos + 12], _I32.pack(leader_epoch))
        if append_time_ms is not None:
            parts.append(memoryview(stamp_log_append_time(view[pos:end], append_time_ms))[LOG_OVERHEAD + 4 :])
        else:
            parts.append(view[pos + LOG_OVERHEAD + 4 : end])
        assigned.append((pos, header.with_base_offset(offset)))
        offset += header.last_offset_delta + 1
    return PreparedAppend(parts, assigned, offset)


def duplicate_info(duplicate: BatchMetadata, config: LogConfig, log_start_offset: int) -> LogAppendInfo:
    """The answer to a retry of a batch already written: its original offsets."""
    append_time = config.message_timestamp_type == "LogAppendTime"
    return LogAppendInfo(
        base_offset=duplicate.first_offset,
        last_offset=duplicate.last_offset,
        log_append_time=duplicate.timestamp if append_time else -1,
        log_start_offset=log_start_offset,
        duplicate=True,
    )
