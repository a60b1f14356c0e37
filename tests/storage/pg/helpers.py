"""Helpers for the cluster backend's tests: taking a partition as the lease layer does, and batches."""

from __future__ import annotations

import asyncpg

from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.records import Record, build_batch, read_records
from storage.api import PartitionLog, TopicPartition
from storage.pg.log_source import PgLogSource
from storage.pg.partition_log import PgPartitionLog


async def take(db: asyncpg.Pool, source: PgLogSource, tp: TopicPartition) -> PgPartitionLog:
    """Take tp for source's broker in the database (a new leader epoch, as the lease layer's
    UPDATE does), then open it there."""
    epoch = await db.fetchval(
        "UPDATE partitions p SET leader = $1, leader_epoch = leader_epoch + 1 FROM topics t "
        "WHERE t.topic_id = p.topic_id AND t.name = $2 AND p.partition = $3 RETURNING p.leader_epoch",
        source.node_id, tp.topic, tp.partition)
    assert epoch is not None, f"{tp} has no row"
    return await source.open_partition(tp, epoch)


def batch(n: int = 1, ts: int = 1000, tag: bytes = b"v", *, pid: int = -1, epoch: int = -1, seq: int = -1,
          txn: bool = False) -> bytes:
    return bytes(build_batch([Record(key=b"k%d" % i, value=tag + b"%d" % i, timestamp=ts + i) for i in range(n)],
                             producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=txn))


def marker(pid: int, epoch: int = 0, *, commit: bool, coordinator_epoch: int = 0, ts: int = 5000) -> bytes:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytes(build_end_txn_marker(producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch,
                                      control_type=kind, timestamp=ts))


async def values(plog: PartitionLog, offset: int = 0) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every data record from offset to the high watermark."""
    out: list[tuple[int, bytes | None]] = []
    while offset < plog.high_watermark:
        info = await plog.read(offset, 1 << 30)
        for data in info.records:
            for header, records in read_records(data):
                if not header.is_control:
                    out += [(r.offset, r.value) for r in records]
                offset = header.last_offset + 1
    return out
