"""DeleteRecords at the storage layer: the log start offset moves durably, old segments go,
reads, the LSO and retention honour it; and offset look-ups by timestamp find exact records."""

from pathlib import Path

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from storage.api import IsolationLevel, TopicPartition
from storage.log_config import LogConfig
from storage.log_start_offset import CHECKPOINT_NAME, read_log_start_offset, write_log_start_offset
from storage.partition_log import LocalPartitionLog


def batch(n: int = 10, ts0: int = 1000, pid: int = -1, txn: bool = False) -> bytes:
    records = [Record(value=b"v%d" % i, timestamp=ts0 + i) for i in range(n)]
    return bytes(build_batch(records, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                             base_sequence=0 if pid >= 0 else -1, transactional=txn))


def open_log(directory: Path, clean: bool = True, **config: object) -> LocalPartitionLog:
    plog = LocalPartitionLog(TopicPartition("t", 0), directory, LogConfig(**config))  # type: ignore[arg-type]
    plog.open(clean_shutdown=clean)
    plog.start()
    return plog


def crash(plog: LocalPartitionLog) -> None:
    assert plog._task is not None
    plog._task.cancel()
    for seg in plog.segments:
        seg.close()


def test_checkpoint_round_trip_and_kafka_text_format(tmp_path: Path) -> None:
    assert read_log_start_offset(tmp_path) is None
    write_log_start_offset(tmp_path, "orders", 3, 42)
    assert (tmp_path / CHECKPOINT_NAME).read_text() == "0\n1\norders 3 42\n"
    assert read_log_start_offset(tmp_path) == 42


def test_malformed_checkpoint_is_ignored(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_NAME).write_text("7\n1\norders 3 x\n")
    assert read_log_start_offset(tmp_path) is None


async def test_delete_records_survives_a_crash_and_drops_whole_segments(tmp_path: Path) -> None:
    plog = open_log(tmp_path, segment_bytes=400)
    for i in range(6):
        await plog.append(batch(ts0=1000 * i))  # 60 records, several segments
    assert len(plog.segments) > 2
    assert await plog.delete_records_before(35) == 35
    assert all(s.base_offset <= 35 for s in plog.segments[:1]) and plog.segments[0].base_offset > 0
    with pytest.raises(KafkaError) as info:
        await plog.read(34, 1 << 20)
    assert info.value.code is ErrorCode.offset_out_of_range
    assert (await plog.read(35, 1 << 20)).log_start_offset == 35
    crash(plog)

    plog = open_log(tmp_path, clean=False, segment_bytes=400)
    assert plog.log_start_offset == 35
    # Retention deleting the segment that holds 35 must not move the start backwards.
    assert await plog.delete_records_before(10) == 35
    assert await plog.offset_for_timestamp(0) == (35, 3005)
    await plog.close()


async def test_delete_records_limits_and_policy(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    await plog.append(batch())
    for bad in (11, -2):
        with pytest.raises(KafkaError) as info:
            await plog.delete_records_before(bad)
        assert info.value.code is ErrorCode.offset_out_of_range
    assert await plog.delete_records_before(-1) == 10 == plog.log_end_offset
    await plog.close()
    compacted = open_log(tmp_path / "c", cleanup_policy="compact")
    with pytest.raises(KafkaError) as info:
        await compacted.delete_records_before(0)
    assert info.value.code is ErrorCode.policy_violation
    await compacted.close()


async def test_last_stable_offset_never_below_log_start(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    await plog.append(batch(n=5, pid=9, txn=True))  # 0-4, open transaction
    await plog.append(batch(n=5))  # 5-9
    assert plog.last_stable_offset == 0
    await plog.delete_records_before(7)
    assert plog.last_stable_offset == 7
    info = await plog.read(7, 1 << 20, IsolationLevel.READ_COMMITTED)
    assert info.last_stable_offset == 7 and info.records == []
    await plog.close()


async def test_offset_lookups_find_the_exact_record_inside_a_batch(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    await plog.append(batch(n=10, ts0=1000))  # one batch: offsets 0-9, timestamps 1000-1009
    assert await plog.offset_for_timestamp(1004) == (4, 1004)
    assert await plog.offset_for_timestamp(1010) is None
    assert await plog.offset_for_max_timestamp() == (9, 1009)
    await plog.close()
