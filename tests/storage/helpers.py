"""Helpers for storage tests: batch headers built without encoding records, and a crash."""

from protocol.control import ControlRecordType, EndTransactionMarker
from protocol.record_batch import RecordBatchHeader


def header(
    pid=1, epoch=0, seq=0, count=1, offset=0, *, txn=False, control=False, ts=1000
) -> RecordBatchHeader:
    attributes = (0x10 if txn or control else 0) | (0x20 if control else 0)
    return RecordBatchHeader(
        base_offset=offset,
        batch_length=0,
        partition_leader_epoch=0,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=count - 1,
        base_timestamp=ts,
        max_timestamp=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=-1 if control else seq,
        records_count=count,
    )


def marker(commit=True, coordinator_epoch=0) -> EndTransactionMarker:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return EndTransactionMarker(control_type=kind, coordinator_epoch=coordinator_epoch)


def crash(plog) -> None:
    """Leave a partition log's files as kill -9 would: no flush, no snapshot at close."""
    plog._task.cancel()
    plog.close_files()
