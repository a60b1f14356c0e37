"""Issue 9: an append is all or nothing. Faults are injected at every file step of an append
(.log, .index, .timeindex, .txnindex), at a roll (new files, producer snapshot) and in the undo
itself, through the FileSystem seam (tests/storage/faulty_fs.py)."""

import errno
import logging
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from storage.api import AbortedTxn, AppendOrigin, IsolationLevel, TopicPartition
from storage.log_config import LogConfig
from storage.partition_log import LocalPartitionLog
from tests.storage.faulty_fs import FaultyFileSystem
from tests.storage.helpers import crash
from tests.storage.test_partition_log_txn import batch, marker

STEPS = [".log", ".index", ".timeindex", ".txnindex"]
# (after, short): nothing written; part of the bytes then ENOSPC; a short write (e.g. 4 of 12)
MODES = {"enospc": (0, False), "partial": (4, False), "short": (4, True)}


def open_log(directory: Path, fs: FaultyFileSystem, **config) -> LocalPartitionLog:
    plog = LocalPartitionLog(TopicPartition("t", 0), directory, LogConfig(index_interval_bytes=1, **config), fs=fs)
    plog.open(clean_shutdown=False)
    plog.start()
    return plog



def file_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.iterdir())}


async def stored_offsets(plog) -> list[int]:
    info = await plog.read(0, 1 << 30)
    return [o for data in info.records for _, h in iter_batches(data) for o in range(h.base_offset, h.last_offset + 1)]


async def _setup(tmp_path):
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs)
    await plog.append(batch(pid=1, seq=0, n=2, txn=True))  # 0-1, an open transaction
    await plog.append(batch(pid=2, seq=0))  # 2, an idempotent producer
    return fs, plog


async def _refused(plog, records, origin=AppendOrigin.CLIENT):
    with pytest.raises(KafkaError) as info:
        await plog.append(records, origin)
    assert info.value.code is ErrorCode.kafka_storage_error
    return info.value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step", STEPS)
async def test_a_failed_abort_marker_leaves_no_trace_and_goes_in_once_space_is_back(tmp_path, step, mode):
    fs, plog = await _setup(tmp_path)
    before = file_sizes(tmp_path)
    after, short = MODES[mode]
    fault = fs.inject(op="write", suffix=step, after=after, short=short)
    await _refused(plog, marker(pid=1, commit=False), AppendOrigin.COORDINATOR)
    assert fault.fired == 1
    assert file_sizes(tmp_path) == before
    assert (plog.log_end_offset, plog.last_stable_offset) == (3, 0)
    info = await plog.append(marker(pid=1, commit=False), AppendOrigin.COORDINATOR)
    assert info.base_offset == 3 and plog.last_stable_offset == 4
    crash(plog)
    plog = open_log(tmp_path, FaultyFileSystem())
    try:
        assert await stored_offsets(plog) == [0, 1, 2, 3]
        read = await plog.read(0, 1 << 20, IsolationLevel.READ_COMMITTED)
        assert read.aborted_transactions == [
            AbortedTxn(producer_id=1, first_offset=0, last_offset=3, last_stable_offset=4)
        ]
    finally:
        await plog.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step", STEPS[:3])
async def test_a_failed_idempotent_batch_can_be_retried_with_the_same_sequence(tmp_path, step, mode):
    fs, plog = await _setup(tmp_path)
    before = file_sizes(tmp_path)
    after, short = MODES[mode]
    fs.inject(op="write", suffix=step, after=after, short=short)
    await _refused(plog, batch(pid=2, seq=1, n=3))
    assert file_sizes(tmp_path) == before and plog.log_end_offset == 3
    retry = await plog.append(batch(pid=2, seq=1, n=3))
    assert (retry.base_offset, retry.last_offset, retry.duplicate) == (3, 5, False)
    again = await plog.append(batch(pid=2, seq=1, n=3))
    assert (again.base_offset, again.duplicate) == (3, True)
    assert (await plog.append(batch(pid=3, seq=0))).base_offset == 6
    crash(plog)
    plog = open_log(tmp_path, FaultyFileSystem())
    try:
        assert await stored_offsets(plog) == list(range(7))
    finally:
        await plog.close()


async def test_a_disk_full_for_several_appends_then_freed(tmp_path):
    fs, plog = await _setup(tmp_path)
    fs.inject(op="write", suffix=".log", after=10, times=None)
    for _ in range(3):
        await _refused(plog, batch(pid=2, seq=1))
    fs.clear()
    assert (await plog.append(batch(pid=2, seq=1))).base_offset == 3
    await plog.close()


async def test_a_failed_undo_takes_the_partition_offline_with_one_error_line(tmp_path, caplog):
    fs, plog = await _setup(tmp_path)
    fs.inject(op="write", suffix=".index", errno=errno.EIO)
    fs.inject(op="truncate", suffix=".log", errno=errno.EIO)
    with caplog.at_level(logging.WARNING):
        error = await _refused(plog, batch(pid=2, seq=1))
    assert "offline" in str(error)
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    fs.clear()
    await _refused(plog, batch(pid=2, seq=1))
    with pytest.raises(KafkaError) as info:
        await plog.read(0, 1 << 20)
    assert info.value.code is ErrorCode.kafka_storage_error
    await plog.close()


@pytest.mark.parametrize(("op", "suffix"), [
    ("fsync", ".log"),  # flushing the old segment
    ("open", ".log"), ("open", ".index"), ("open", ".timeindex"), ("open", ".txnindex"),
    ("open", ".snapshot.tmp"), ("write", ".snapshot.tmp"),
])
async def test_a_failed_roll_removes_the_new_files_and_the_log_goes_on(tmp_path, op, suffix):
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs, segment_bytes=200)
    await plog.append(batch(pid=2, seq=0, value=b"x" * 100))
    before = file_sizes(tmp_path)
    fs.inject(op=op, suffix=suffix)
    await _refused(plog, batch(pid=2, seq=1, value=b"x" * 100))
    assert file_sizes(tmp_path) == before and len(plog.segments) == 1
    info = await plog.append(batch(pid=2, seq=1, value=b"x" * 100))
    assert info.base_offset == 1 and [s.base_offset for s in plog.segments] == [0, 1]
    crash(plog)
    plog = open_log(tmp_path, FaultyFileSystem(), segment_bytes=200)
    try:
        assert await stored_offsets(plog) == [0] and plog.log_end_offset == 2
        assert (await plog.append(batch(pid=2, seq=1, value=b"x" * 100))).duplicate
    finally:
        await plog.close()


async def test_a_failed_fsync_of_a_periodic_flush_takes_the_partition_offline(tmp_path):
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs, flush_messages=1)
    fs.inject(op="fsync", suffix=".log", errno=errno.EIO)
    await _refused(plog, batch(pid=2, seq=0))
    await _refused(plog, batch(pid=2, seq=1))
    await plog.close()


@pytest.mark.parametrize("short", [True, False])
def test_a_short_or_failed_whole_file_write_leaves_the_old_file(tmp_path, short):
    """Snapshots, the log start offset checkpoint and topics.json are written with
    write_atomically: a write cut short is an error and the file keeps its old content."""
    fs = FaultyFileSystem()
    path = tmp_path / "log-start-offset-checkpoint"
    fs.write_atomically(path, b"old")
    fs.inject(op="write", suffix=".tmp", after=2, short=short)
    with pytest.raises(OSError) as info:
        fs.write_atomically(path, b"0\n1\nt 0 42\n")
    assert info.value.errno == errno.ENOSPC or not short
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


async def test_a_failed_log_start_offset_checkpoint_moves_nothing(tmp_path):
    fs, plog = await _setup(tmp_path)
    fs.inject(op="write", suffix="checkpoint.tmp", after=3, short=True)
    with pytest.raises(KafkaError) as info:
        await plog.delete_records_before(2)
    assert info.value.code is ErrorCode.kafka_storage_error and plog.log_start_offset == 0
    assert await plog.delete_records_before(2) == 2
    await plog.close()
