"""Driving a compacted LocalPartitionLog through whole cleaning passes, in process."""

from pathlib import Path

from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.records import Record, build_batch, read_records
from storage.api import AppendOrigin, IsolationLevel, TopicPartition
from storage.cleaner.clean_pass import run_clean_pass
from storage.log_config import LogConfig
from storage.partition_log import LocalPartitionLog

COMPACT = {"cleanup_policy": "compact", "segment_bytes": 300, "min_cleanable_dirty_ratio": 0.01}


def open_log(directory: Path, clean: bool = False, **config: object) -> LocalPartitionLog:
    plog = LocalPartitionLog(TopicPartition("t", 0), directory, LogConfig(**{**COMPACT, **config}))  # type: ignore[arg-type]
    plog.open(clean_shutdown=clean)
    plog.start()
    return plog


def kv(key: bytes, value: bytes | None, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
       ts: int = 1000) -> bytes:
    return bytes(build_batch([Record(key=key, value=value, timestamp=ts)], producer_id=pid, producer_epoch=epoch,
                             base_sequence=seq, transactional=txn))


def end_txn(pid: int, commit: bool, epoch: int = 0) -> bytes:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytes(build_end_txn_marker(producer_id=pid, producer_epoch=epoch, coordinator_epoch=0,
                                      control_type=kind, timestamp=1000))


async def write_marker(plog: LocalPartitionLog, pid: int, commit: bool, epoch: int = 0) -> None:
    await plog.append(end_txn(pid, commit, epoch), AppendOrigin.COORDINATOR)


async def clean(plog: LocalPartitionLog, now_ms: int = 10_000, capacity: int = 1 << 20) -> bool:
    """One pass, as the broker's cleaner runs it (the worker's part in this process)."""
    plan = await plog.plan_cleaning(now_ms, capacity)
    if plan is None:
        return False
    await plog.swap_cleaned(run_clean_pass(plan.task))
    return True


async def records(plog: LocalPartitionLog, isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                  ) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record a consumer at isolation sees, from the start."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = plog.log_start_offset
    end = plog.last_stable_offset if isolation is IsolationLevel.READ_COMMITTED else plog.log_end_offset
    while offset < end:
        info = await plog.read(offset, 1 << 30, isolation)
        if not info.records:
            break
        # The Java consumer's filter: a producer is aborting from its aborted transaction's first
        # offset up to its ABORT marker.
        pending = sorted(info.aborted_transactions or [], key=lambda a: a.first_offset)
        aborting: set[int] = set()
        for header, recs in read_records(b"".join(info.records)):
            offset = header.last_offset + 1
            while pending and pending[0].first_offset <= header.last_offset:
                aborting.add(pending.pop(0).producer_id)
            if header.is_control:
                if recs and recs[0].key is not None and recs[0].key[-1:] == b"\x00":
                    aborting.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in aborting:
                continue
            out += [(r.offset, r.key, r.value) for r in recs if r.offset >= plog.log_start_offset]
    return out


def latest(writes: list[tuple[int, bytes, bytes | None]]) -> dict[bytes, tuple[int, bytes | None]]:
    out: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, key, value in writes:
        out[key] = (offset, value)
    return out


def compressed(plain: bytes, codec: int) -> bytes:
    """The batch plain (uncompressed) with its records compressed in codec, header and CRC to match."""
    import struct

    from crc32c import crc32c

    from protocol.record_batch import RecordBatchHeader
    from storage.cleaner.batch_filter import compress

    h = RecordBatchHeader.parse(plain)
    packed = bytearray(plain[:61]) + compress(codec, plain[61:], xerial=False)
    struct.pack_into(">i", packed, 8, len(packed) - 12)  # batch_length
    struct.pack_into(">h", packed, 21, h.attributes | codec)  # attributes: the codec
    struct.pack_into(">I", packed, 17, crc32c(bytes(packed[21:])))
    return bytes(packed)
