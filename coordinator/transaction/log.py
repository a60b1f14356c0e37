"""__transaction_state records: Kafka's TransactionLogKey / TransactionLogValue (versions 0 and 1).

Key   = int16 key version (0) + transactional_id (int16 length + UTF-8).
Value = int16 value version (0) + producer_id i64 + producer_epoch i16 + txn_timeout_ms i32 +
        status i8 (TxnState id) + partitions (nullable i32 count of: topic string + i32 count of
        i32 partition ids) + last_update_timestamp i64 + start_timestamp i64.
Value version 1 (written, as Kafka does, once transaction.version >= 1 is finalized) is the
flexible form of the same fields (compact arrays and strings, an empty tagged-field section per
partition entry) plus tagged fields: 0 PreviousProducerId, 1 NextProducerId (i64, default -1),
2 ClientTransactionVersion (i16, default 0), which Transactions V2 needs across a restart.
A null value (tombstone) removes an expired transactional id.

Versions of eosbroker before kept producer-id blocks here too (Kafka keeps them in its metadata
log): key version 1 with a fixed name, value = int16 version (0) + first_producer_id i64 + size
i32. Kafka's tools cannot read such a record, so blocks now go to a file (state_store.py); the
record is still decoded, for data dirs that hold one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from protocol.errors import CorruptRecordError
from protocol.records import decode_uvarint, encode_uvarint
from storage.api import TopicPartition

from ..partitioning import partition_for
from .metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnTransition
from .producer_id_manager import ProducerIdBlock
from .state import TxnState

__all__ = (
    "TRANSACTION_STATE_TOPIC",
    "TxnLogEntry",
    "decode_record",
    "partition_for",
    "producer_id_block_key",
    "producer_id_block_value",
    "transaction_key",
    "transaction_value",
)

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
TXN_KEY_VERSION: Final = 0
PRODUCER_ID_BLOCK_KEY_VERSION: Final = 1
_PRODUCER_ID_BLOCK_NAME: Final = b"producer-id-block"
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_VALUE_HEAD: Final = struct.Struct(">hqhib")
_TIMESTAMPS: Final = struct.Struct(">qq")
_BLOCK: Final = struct.Struct(">hqi")


def _string(s: str | bytes) -> bytes:
    data = s.encode() if isinstance(s, str) else s
    return _I16.pack(len(data)) + data


def transaction_key(transactional_id: str) -> bytes:
    return _I16.pack(TXN_KEY_VERSION) + _string(transactional_id)


def transaction_value(t: TxnTransition, version: int = 0) -> bytes | None:
    if t.state is TxnState.DEAD:
        return None
    if t.state is TxnState.EMPTY and t.topic_partitions:
        raise ValueError("an Empty transaction cannot hold partitions")
    head = _VALUE_HEAD.pack(version, t.producer_id, t.producer_epoch, t.txn_timeout_ms, t.state.value)
    out = bytearray(head)
    by_topic: dict[str, list[int]] = {}
    for tp in t.topic_partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    partitions = None if t.state is TxnState.EMPTY else sorted(by_topic.items())
    out += _partitions_v1(partitions) if version >= 1 else _partitions_v0(partitions)
    out += _TIMESTAMPS.pack(t.txn_last_update_timestamp, t.txn_start_timestamp)
    if version >= 1:
        out += _tagged_fields(t)
    return bytes(out)


def _partitions_v0(partitions: list[tuple[str, list[int]]] | None) -> bytes:
    if partitions is None:
        return _I32.pack(-1)
    out = bytearray(_I32.pack(len(partitions)))
    for topic, ids in partitions:
        out += _string(topic) + _I32.pack(len(ids)) + struct.pack(f">{len(ids)}i", *sorted(ids))
    return bytes(out)


def _partitions_v1(partitions: list[tuple[str, list[int]]] | None) -> bytes:
    if partitions is None:
        return encode_uvarint(0)
    out = bytearray(encode_uvarint(len(partitions) + 1))
    for topic, ids in partitions:
        name = topic.encode()
        out += encode_uvarint(len(name) + 1) + name + encode_uvarint(len(ids) + 1)
        out += struct.pack(f">{len(ids)}i", *sorted(ids)) + encode_uvarint(0)  # no tagged fields
    return bytes(out)


def _tagged_fields(t: TxnTransition) -> bytes:
    fields = []  # (tag, bytes), only those that differ from their default, in tag order
    if t.last_producer_id != NO_PRODUCER_ID:
        fields.append((0, struct.pack(">q", t.last_producer_id)))
    if t.next_producer_id != NO_PRODUCER_ID:
        fields.append((1, struct.pack(">q", t.next_producer_id)))
    if t.client_transaction_version != 0:
        fields.append((2, _I16.pack(t.client_transaction_version)))
    out = bytearray(encode_uvarint(len(fields)))
    for tag, data in fields:
        out += encode_uvarint(tag) + encode_uvarint(len(data)) + data
    return bytes(out)


def producer_id_block_key() -> bytes:
    return _I16.pack(PRODUCER_ID_BLOCK_KEY_VERSION) + _string(_PRODUCER_ID_BLOCK_NAME)


def producer_id_block_value(block: ProducerIdBlock) -> bytes:
    return _BLOCK.pack(0, block.first_producer_id, block.size)


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnLogEntry:
    """A decoded transaction record; transition None means the id was removed."""

    transactional_id: str
    transition: TxnTransition | None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: struct.Struct) -> tuple[int, ...]:
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def uvarint(self) -> int:
        try:
            value, self.pos = decode_uvarint(self.data, self.pos)
        except IndexError:
            raise CorruptRecordError(f"unterminated varint at byte {self.pos}") from None
        return value

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptRecordError(f"{n} bytes at byte {self.pos} do not fit")
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def string(self, compact: bool = False) -> str:
        n = self.uvarint() - 1 if compact else self.take(_I16)[0]
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptRecordError(f"string of length {n} at byte {self.pos} does not fit")
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s


def _decode_partitions(r: _Reader) -> frozenset[TopicPartition]:
    (topics,) = r.take(_I32)
    partitions = set()
    for _ in range(max(topics, 0)):
        topic = r.string()
        (n,) = r.take(_I32)
        for _ in range(n):
            partitions.add(TopicPartition(topic, r.take(_I32)[0]))
    return frozenset(partitions)


def _decode_partitions_v1(r: _Reader) -> frozenset[TopicPartition]:
    partitions = set()
    for _ in range(r.uvarint() - 1):  # -1: null
        topic = r.string(compact=True)
        for _ in range(r.uvarint() - 1):
            partitions.add(TopicPartition(topic, r.take(_I32)[0]))
        _skip_tagged_fields(r)
    return frozenset(partitions)


def _skip_tagged_fields(r: _Reader) -> dict[int, bytes]:
    return {r.uvarint(): r.raw(r.uvarint()) for _ in range(r.uvarint())}


def _decode_value(data: bytes) -> TxnTransition:
    r = _Reader(data)
    version, pid, epoch, timeout, status = r.take(_VALUE_HEAD)
    if version not in (0, 1):
        raise CorruptRecordError(f"__transaction_state value version {version} is not supported")
    partitions = _decode_partitions(r) if version == 0 else _decode_partitions_v1(r)
    last_update, start = r.take(_TIMESTAMPS)
    tags = _skip_tagged_fields(r) if version >= 1 else {}
    if r.pos != len(data):
        raise CorruptRecordError(f"{len(data) - r.pos} bytes after a version {version} __transaction_state value")
    return TxnTransition(
        state=TxnState(status),
        producer_id=pid,
        last_producer_id=struct.unpack(">q", tags[0])[0] if 0 in tags else NO_PRODUCER_ID,
        producer_epoch=epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=timeout,
        topic_partitions=partitions,
        txn_start_timestamp=start,
        txn_last_update_timestamp=last_update,
        next_producer_id=struct.unpack(">q", tags[1])[0] if 1 in tags else NO_PRODUCER_ID,
        client_transaction_version=_I16.unpack(tags[2])[0] if 2 in tags else 0,
    )


def decode_record(key: bytes | None, value: bytes | None) -> TxnLogEntry | ProducerIdBlock:
    """One __transaction_state record; CorruptRecordError for anything unreadable."""
    try:
        if key is None:
            raise CorruptRecordError("__transaction_state record without a key")
        r = _Reader(key)
        (version,) = r.take(_I16)
        if version == PRODUCER_ID_BLOCK_KEY_VERSION:
            if value is None:
                raise CorruptRecordError("producer id block record without a value")
            _v, first, size = _BLOCK.unpack_from(value)
            return ProducerIdBlock(first_producer_id=first, size=size)
        if version != TXN_KEY_VERSION:
            raise CorruptRecordError(f"__transaction_state key version {version} is unknown")
        transactional_id = r.string()
        transition = None if value is None else _decode_value(value)
        return TxnLogEntry(transactional_id=transactional_id, transition=transition)
    except (struct.error, ValueError) as exc:
        raise CorruptRecordError(f"unreadable __transaction_state record: {exc}") from exc
