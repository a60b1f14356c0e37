"""Control records: the COMMIT / ABORT markers that end a transaction on a partition.

Layout, from Kafka's ControlRecordType, EndTransactionMarker and
MemoryRecords.writeEndTransactionalMarker: a batch with attributes transactional|control (0x30),
no compression, CreateTime, the transaction's producer id and epoch, base_sequence -1, and exactly
one record (offset delta 0) whose

    key   = int16 version (0) + int16 type (0 = ABORT, 1 = COMMIT)
    value = int16 version (0) + int32 coordinator_epoch

Readers ignore unknown types (KRaft uses 2-6 for its own control records) and tolerate newer
versions by reading only the fields they know, as Kafka does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from .errors import CorruptRecordError
from .record_batch import BATCH_HEADER, RecordBatchHeader
from .records import Record, build_batch, decode_record

__all__ = (
    "ControlRecordType",
    "EndTransactionMarker",
    "build_end_txn_marker",
    "parse_control_type",
    "read_end_txn_marker",
)

CURRENT_CONTROL_VERSION: Final = 0
CURRENT_MARKER_VERSION: Final = 0
_KEY: Final = struct.Struct(">hh")
_VALUE: Final = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionMarker:
    control_type: ControlRecordType
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type is ControlRecordType.COMMIT


def build_end_txn_marker(
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    control_type: ControlRecordType,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = 0,
) -> bytearray:
    """One control batch holding one end-transaction marker; a marker consumes one offset."""
    record = Record(
        timestamp=timestamp,
        key=_KEY.pack(CURRENT_CONTROL_VERSION, control_type),
        value=_VALUE.pack(CURRENT_MARKER_VERSION, coordinator_epoch),
    )
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def parse_control_type(key: bytes | None) -> int:
    """The control type in a control record key: a ControlRecordType, or another int to ignore."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key must hold {_KEY.size} bytes, got {key!r}")
    version, control_type = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"control record key has negative version {version}")
    try:
        return ControlRecordType(control_type)
    except ValueError:
        return int(control_type)


def read_end_txn_marker(
    batch: bytes | memoryview, pos: int = 0, header: RecordBatchHeader | None = None
) -> EndTransactionMarker | None:
    """The marker in the control batch at pos, or None for a non-marker control type.

    Control batches are never compressed, so the record sits right after the header.
    """
    header = header or RecordBatchHeader.parse(batch, pos)
    if not header.is_control:
        raise ValueError(f"batch at offset {header.base_offset} is not a control batch")
    if header.compression or header.records_count != 1:
        raise CorruptRecordError(
            f"control batch at offset {header.base_offset} must hold one uncompressed record"
        )
    try:
        record, _ = decode_record(memoryview(batch), pos + BATCH_HEADER.size, header)
    except (IndexError, ValueError) as exc:
        raise CorruptRecordError(f"control batch at offset {header.base_offset}: {exc}") from exc
    control_type, value = parse_control_type(record.key), record.value
    if not isinstance(control_type, ControlRecordType):
        return None
    if value is None or len(value) < _VALUE.size:
        raise CorruptRecordError(
            f"end transaction marker at offset {header.base_offset} has a short value {value!r}"
        )
    version, coordinator_epoch = _VALUE.unpack_from(value)
    if version < 0:
        raise CorruptRecordError(f"end transaction marker value has negative version {version}")
    return EndTransactionMarker(control_type=control_type, coordinator_epoch=coordinator_epoch)
