"""Producer state, LSO and aborted transactions as the partition log actor applies them."""

import asyncio
import threading
from pathlib import Path

import pytest

from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from protocol.records import Record, build_batch
from storage.api import AbortedTxn, AppendOrigin, IsolationLevel, TopicPartition
from storage.fs import FileSystem
from storage.log_config import LogConfig
from storage.log_messages import BARRIER
from storage.partition_log import LocalPartitionLog
from storage.producer_snapshot import list_snapshot_offsets
from tests.storage.helpers import crash

COMMITTED, UNCOMMITTED = IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED


def batch(pid=1, epoch=0, seq=0, n=1, txn=False, value=b"v"):
    records = [Record(value=value + str(i).encode(), timestamp=1000 + i) for i in range(n)]
    return bytes(build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                             transactional=txn))


def marker(pid=1, epoch=0, commit=True, coordinator_epoch=0):
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytes(build_end_txn_marker(producer_id=pid, producer_epoch=epoch, control_type=kind,
                                      coordinator_epoch=coordinator_epoch, timestamp=2000))


def open_log(directory: Path, clean=False, **config) -> LocalPartitionLog:
    plog = LocalPartitionLog(TopicPartition("t", 0), directory, LogConfig(**config))
    plog.open(clean_shutdown=clean)
    plog.start()
    return plog



def offsets(info):
    return [h.base_offset for data in info.records for _, h in iter_batches(data)]


@pytest.fixture
async def plog(any_log):
    """Tests that take plog are the PartitionLog contract: they run on every backend."""
    return any_log


async def test_retried_batch_gets_original_offset_and_is_not_written(plog):
    first = await plog.append(batch(seq=0, n=3))
    await plog.append(batch(seq=3))
    again = await plog.append(batch(seq=0, n=3))
    assert (again.base_offset, again.last_offset, again.duplicate) == (0, 2, True)
    assert plog.log_end_offset == 4 and not first.duplicate


async def test_sequence_gap_is_refused_and_nothing_written(plog):
    await plog.append(batch(seq=0))
    with pytest.raises(KafkaError) as info:
        await plog.append(batch(seq=2))
    assert info.value.code is ErrorCode.out_of_order_sequence_number
    assert plog.log_end_offset == 1


async def test_open_transaction_holds_back_read_committed(plog):
    await plog.append(batch(pid=7, seq=0))  # 0: plain
    await plog.append(batch(pid=1, seq=0, txn=True))  # 1: txn begins
    await plog.append(batch(pid=7, seq=1))  # 2: plain, after the open txn
    assert (plog.high_watermark, plog.last_stable_offset) == (3, 1)
    committed = await plog.read(0, 1 << 20, COMMITTED)
    assert offsets(committed) == [0] and committed.last_stable_offset == 1
    assert committed.aborted_transactions == []
    assert offsets(await plog.read(1, 1 << 20, COMMITTED)) == []
    uncommitted = await plog.read(0, 1 << 20, UNCOMMITTED)
    assert offsets(uncommitted) == [0, 1, 2] and uncommitted.aborted_transactions is None
    await plog.append(marker(pid=1, commit=True), AppendOrigin.COORDINATOR)  # 3
    assert plog.last_stable_offset == 4
    assert offsets(await plog.read(1, 1 << 20, COMMITTED)) == [1, 2, 3]


async def test_aborted_transactions_are_listed_for_overlapping_reads(plog):
    await plog.append(batch(pid=1, seq=0, txn=True))  # 0
    await plog.append(batch(pid=2, seq=0, txn=True))  # 1
    await plog.append(marker(pid=1, commit=False), AppendOrigin.COORDINATOR)  # 2
    await plog.append(marker(pid=2, commit=True), AppendOrigin.COORDINATOR)  # 3
    await plog.append(batch(pid=3, seq=0))  # 4
    info = await plog.read(0, 1 << 20, COMMITTED)
    assert offsets(info) == [0, 1, 2, 3, 4]
    assert info.aborted_transactions == [
        AbortedTxn(producer_id=1, first_offset=0, last_offset=2, last_stable_offset=1)
    ]
    assert (await plog.read(3, 1 << 20, COMMITTED)).aborted_transactions == []


async def test_non_transactional_write_inside_open_transaction_is_refused(plog):
    await plog.append(batch(pid=1, seq=0, txn=True))
    with pytest.raises(KafkaError) as info:
        await plog.append(batch(pid=1, seq=1, txn=False))
    assert info.value.code is ErrorCode.invalid_txn_state


async def test_marker_from_fenced_epoch_is_refused(plog):
    await plog.append(batch(pid=1, epoch=3, seq=0, txn=True))
    with pytest.raises(KafkaError) as info:
        await plog.append(marker(pid=1, epoch=2), AppendOrigin.COORDINATOR)
    assert info.value.code is ErrorCode.invalid_producer_epoch
    assert plog.last_stable_offset == 0


async def test_clients_cannot_write_markers(plog):
    with pytest.raises(KafkaError) as info:
        await plog.append(marker())
    assert info.value.code is ErrorCode.invalid_record


async def _history(plog):
    await plog.append(batch(pid=1, seq=0, n=2, txn=True))  # 0-1
    await plog.append(batch(pid=2, seq=0, txn=True))  # 2
    await plog.append(marker(pid=1, commit=False), AppendOrigin.COORDINATOR)  # 3
    await plog.append(batch(pid=3, seq=0))  # 4
    await plog.append(batch(pid=3, seq=1))  # 5


@pytest.mark.parametrize("clean", [True, False])
async def test_restart_rebuilds_producer_state_lso_and_index(tmp_path, clean):
    plog = open_log(tmp_path, segment_bytes=200)  # a few batches per segment: rolls happen
    await _history(plog)
    assert len(plog.segments) > 1 and list_snapshot_offsets(tmp_path)
    if clean:
        await plog.close()
    else:
        crash(plog)
    plog = open_log(tmp_path, clean=clean, segment_bytes=200)
    try:
        assert plog.last_stable_offset == 2  # pid 2 is still open
        info = await plog.read(0, 1 << 20, COMMITTED)
        assert info.aborted_transactions == [
            AbortedTxn(producer_id=1, first_offset=0, last_offset=3, last_stable_offset=2)
        ]
        dup = await plog.append(batch(pid=3, seq=1))
        assert (dup.base_offset, dup.duplicate) == (5, True)
        await plog.append(marker(pid=2, commit=True), AppendOrigin.COORDINATOR)
        assert plog.last_stable_offset == plog.high_watermark == 7
    finally:
        await plog.close()


async def test_lost_snapshots_and_index_are_rebuilt_from_the_log(tmp_path):
    plog = open_log(tmp_path, segment_bytes=200)
    await _history(plog)
    crash(plog)
    for p in [*tmp_path.glob("*.snapshot"), *tmp_path.glob("*.txnindex")]:
        p.unlink()
    plog = open_log(tmp_path, segment_bytes=200)
    try:
        assert plog.last_stable_offset == 2
        info = await plog.read(0, 1 << 20, COMMITTED)
        assert [a.producer_id for a in info.aborted_transactions] == [1]
        assert list(tmp_path.glob("*.txnindex"))
    finally:
        await plog.close()


async def test_issue_9_recovery_after_a_crash_replays_only_after_the_newest_snapshot(tmp_path):
    """Producer state is snapshotted every snapshot_interval_bytes, so a restart after kill -9
    replays from the newest snapshot, not from offset 0 (and superseded snapshots are gone)."""
    plog = LocalPartitionLog(TopicPartition("t", 0), tmp_path, LogConfig(), snapshot_interval_bytes=1000)
    plog.open(clean_shutdown=False)
    plog.start()
    for seq in range(40):
        await plog.append(batch(pid=1, seq=seq, value=b"x" * 60))
    await plog.append(batch(pid=2, seq=0, txn=True))  # 40: an open transaction
    await plog.append(batch(pid=1, seq=40))  # 41
    snapshots = list_snapshot_offsets(tmp_path)
    assert len(snapshots) == 1 and 0 < snapshots[0] <= 42
    crash(plog)
    plog = open_log(tmp_path)
    try:
        assert plog.txns.recovery_start_offset == snapshots[0]
        assert plog.txns.recovery_replayed == 42 - snapshots[0]
        assert plog.last_stable_offset == 40
        assert (await plog.append(batch(pid=1, seq=40))).duplicate
        assert (await plog.append(batch(pid=1, seq=41))).base_offset == 42
    finally:
        await plog.close()


class _HeldSnapshots(FileSystem):
    """Holds each periodic (unsynced) snapshot write until released; records the files fsynced."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.synced: list[str] = []

    def write_atomically(self, path: Path, data: bytes, *, sync: bool = True) -> None:
        if not sync:
            self.release.wait(60)
        super().write_atomically(path, data, sync=sync)

    def fsync(self, fd: int) -> None:
        self.synced.append(str(self.path_of(fd)))
        super().fsync(fd)


async def test_the_append_that_crosses_the_snapshot_interval_is_acknowledged_before_the_snapshot(tmp_path):
    """The periodic snapshot follows the acknowledgements instead of holding them, and is not
    fsynced (an fsync on ext4 writes back the whole file system's dirty pages); the one written
    at a clean close is."""
    fs = _HeldSnapshots()
    one = batch(pid=1, seq=0, value=b"x" * 100)
    plog = LocalPartitionLog(TopicPartition("t", 0), tmp_path, LogConfig(), fs=fs,
                             snapshot_interval_bytes=3 * len(one))
    plog.open(clean_shutdown=False)
    plog.start()
    try:
        for seq in range(3):  # the third crosses the interval
            info = await asyncio.wait_for(plog.append(batch(pid=1, seq=seq, value=b"x" * 100)), 60)
        assert info.base_offset == 2
        assert list_snapshot_offsets(tmp_path) == []  # still held, and the append was answered
        fs.release.set()
        await plog.ask(BARRIER)  # the owner ran what was queued before this
        assert list_snapshot_offsets(tmp_path) == [3]
        assert not [p for p in fs.synced if ".snapshot" in p]
    finally:
        fs.release.set()
        await plog.close()
    assert [p for p in fs.synced if p.endswith("00000000000000000003.snapshot.tmp")]  # the close's


@pytest.mark.parametrize("clean", [True, False])
async def test_issue_11_open_transaction_start_time_survives_a_restart(tmp_path, clean):
    plog = open_log(tmp_path)
    await plog.append(batch(pid=1, n=2))
    await plog.append(batch(pid=5, epoch=2, n=2, txn=True))
    [live] = plog.open_transactions()
    assert live.first_offset == 2 and live.start_timestamp > 1_000_000  # the broker's clock at the append
    if clean:
        await plog.close()  # a snapshot at the log end: nothing replayed at the next open
    else:
        crash(plog)
    plog = open_log(tmp_path, clean=clean)
    try:
        [again] = plog.open_transactions()
        assert (again.producer_id, again.producer_epoch, again.first_offset) == (5, 2, 2)
        assert again.start_timestamp == 1000  # the opening batch's own timestamp
    finally:
        await plog.close()


async def test_an_open_transaction_is_known_by_producer_and_epoch(plog):
    # KIP-890: a Produce v12+ batch for a transaction its partition already holds needs no word
    # with the coordinator; one under the next epoch (Transactions V2 bumps it per transaction) does.
    await plog.append(batch(pid=7, epoch=3, txn=True))
    assert plog.has_open_transaction(7) and plog.has_open_transaction(7, 3)
    assert not plog.has_open_transaction(7, 4) and not plog.has_open_transaction(8)
    await plog.append(marker(pid=7, epoch=3), origin=AppendOrigin.COORDINATOR)
    assert not plog.has_open_transaction(7, 3) and not plog.has_open_transaction(7)
