"""LocalPartitionLog, driven through its actor: append, read, roll, lookups by time, retention,
and reopening (clean and after a crash)."""

import asyncio
import os
import time
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.record_batch import iter_batches
from protocol.records import Record, build_batch, read_records
from storage.api import AppendOrigin, IsolationLevel, TopicPartition
from storage.log_config import LogConfig
from storage.log_messages import BARRIER
from storage.partition_log import LocalPartitionLog
from tests.storage.helpers import crash

DAY_MS = 24 * 3600 * 1000


def batch(n=1, ts=1000, tag=b"v", size=0):
    pad = b"." * size
    return bytes(build_batch([Record(key=b"k%d" % i, value=tag + b"%d" % i + pad, timestamp=ts + i)
                              for i in range(n)]))


def open_log(directory: Path, clean=False, **config) -> LocalPartitionLog:
    plog = LocalPartitionLog(TopicPartition("t", 0), directory, LogConfig(**config))
    plog.open(clean_shutdown=clean)
    plog.start()
    return plog



async def values(plog, offset=0):
    """(offset, value) of every record from offset to the end (a read stops at a segment's end)."""
    out = []
    while offset < plog.log_end_offset:
        info = await plog.read(offset, 1 << 30)
        for data in info.records:
            for _, records in read_records(data):
                out += [(r.offset, r.value) for r in records]
        offset = out[-1][0] + 1
    return out


@pytest.fixture
async def plog(any_log):
    """Tests that take plog are the PartitionLog contract: they run on every backend."""
    return any_log


async def test_offsets_are_assigned_in_order(plog):
    first = await plog.append(batch(3))
    second = await plog.append(batch(2))
    assert (first.base_offset, first.last_offset, second.base_offset, second.last_offset) == (0, 2, 3, 4)
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark) == (0, 5, 5)
    assert await values(plog) == [(0, b"v0"), (1, b"v1"), (2, b"v2"), (3, b"v0"), (4, b"v1")]


async def test_records_may_be_a_view_of_the_request_frame_and_are_not_kept(plog):
    # protocol/produce_request.py hands a large request's records over as a read-only view of its
    # frame; nothing may hold on to it after the append (the frame's memory is accounted to the
    # request only while it is handled), which a bytearray checks: it cannot grow while viewed.
    frame = bytearray(b"head" + batch(3) + b"tail")
    with memoryview(frame) as whole, whole.toreadonly() as readonly, readonly[4:-4] as records:
        info = await plog.append(records)
    frame.extend(b"more")
    assert (info.base_offset, info.last_offset) == (0, 2)
    assert await values(plog) == [(0, b"v0"), (1, b"v1"), (2, b"v2")]


async def test_a_request_of_several_batches_is_written_whole(plog):
    info = await plog.append(batch(2) + batch(3, tag=b"w"))
    assert (info.base_offset, info.last_offset) == (0, 4)
    assert [o for o, _ in await values(plog)] == [0, 1, 2, 3, 4]


async def test_read_from_mid_batch_returns_the_whole_batch(plog):
    await plog.append(batch(5))
    info = await plog.read(3, 1)
    [(_, header)] = list(iter_batches(info.records[0]))
    assert (header.base_offset, header.last_offset) == (0, 4)


async def test_read_respects_max_bytes_but_returns_at_least_one_batch(plog):
    for _ in range(10):
        await plog.append(batch(1, size=100))
    one = len(batch(1, size=100))
    assert (await plog.read(0, 1)).size == one
    assert (await plog.read(0, 3 * one)).size == 3 * one
    assert (await plog.read(10, 1 << 20)).records == []


async def test_read_without_min_one_returns_only_batches_that_fit(plog):
    """A fetch's later partitions (KIP-74: minOneMessage off once a partition sent data): a first
    batch larger than max_bytes is not returned (nor read), and the offsets still are."""
    for _ in range(10):
        await plog.append(batch(1, size=100))
    one = len(batch(1, size=100))
    nothing = await plog.read(0, one - 1, min_one=False)
    assert (nothing.records, nothing.size, nothing.high_watermark, nothing.log_start_offset) == ([], 0, 10, 0)
    assert (await plog.read(0, one, min_one=False)).size == one
    assert (await plog.read(3, 3 * one - 1, min_one=False)).size == 2 * one
    committed = await plog.read(0, 1, IsolationLevel.READ_COMMITTED, min_one=False)
    assert (committed.records, committed.aborted_transactions) == ([], [])


async def test_read_out_of_range(plog):
    await plog.append(batch(2))
    for offset in (-1, 3, 1000):
        with pytest.raises(KafkaError) as info:
            await plog.read(offset, 100)
        assert info.value.code is ErrorCode.offset_out_of_range


async def test_corrupt_or_oversize_appends_write_nothing(tmp_path):
    plog = open_log(tmp_path, max_message_bytes=500)
    bad = bytearray(batch(2))
    bad[-1] ^= 1
    for data, code in [(bytes(bad), ErrorCode.corrupt_message), (batch(1, size=600), ErrorCode.message_too_large),
                       (b"", ErrorCode.corrupt_message)]:
        with pytest.raises(KafkaError) as info:
            await plog.append(data)
        assert info.value.code is code
    assert plog.log_end_offset == 0 and plog.size_bytes == 0
    await plog.close()


async def test_clients_may_not_write_control_batches(plog):
    control = bytes(build_batch([Record(key=b"\0\0\0\0", value=b"\0\0\0\0\0\0", timestamp=1)], control=True,
                                transactional=True, producer_id=5, producer_epoch=0))
    with pytest.raises(KafkaError) as info:
        await plog.append(control, AppendOrigin.CLIENT)
    assert info.value.code is ErrorCode.invalid_record


async def test_segments_roll_at_segment_bytes(tmp_path):
    one = len(batch(1, size=200))
    plog = open_log(tmp_path, segment_bytes=3 * one, index_interval_bytes=1)
    for _ in range(10):
        await plog.append(batch(1, size=200))
    assert [s.base_offset for s in plog.segments] == [0, 3, 6, 9]
    assert all(s.size <= 3 * one for s in plog.segments)
    assert sorted(p.name for p in tmp_path.glob("*.log")) == [f"{b:020d}.log" for b in (0, 3, 6, 9)]
    for offset in range(10):  # every offset is found in its own segment
        info = await plog.read(offset, 1)
        [(_, header)] = list(iter_batches(info.records[0]))
        assert header.base_offset == offset
    await plog.close()


async def test_a_batch_larger_than_segment_bytes_still_goes_in(tmp_path):
    plog = open_log(tmp_path, segment_bytes=100)
    await plog.append(batch(1, size=300))
    await plog.append(batch(1, size=300))
    assert [s.base_offset for s in plog.segments] == [0, 1]
    await plog.close()


async def test_offset_for_timestamp_across_segments(tmp_path):
    plog = open_log(tmp_path, segment_bytes=4 * len(batch(2, size=50)), index_interval_bytes=1)
    for i in range(20):
        await plog.append(batch(2, ts=10_000 + 100 * i, size=50))  # offsets 2i, 2i+1 at ts, ts+1
    assert len(plog.segments) > 3
    # Kafka answers with the first *record* at or after the timestamp, inside its batch.
    assert await plog.offset_for_timestamp(0) == (0, 10_000)
    assert await plog.offset_for_timestamp(10_001) == (1, 10_001)
    assert await plog.offset_for_timestamp(10_002) == (2, 10_100)
    assert await plog.offset_for_timestamp(10_750) == (16, 10_800)
    assert await plog.offset_for_timestamp(11_901) == (39, 11_901)
    assert await plog.offset_for_timestamp(11_902) is None
    assert await plog.offset_for_max_timestamp() == (39, 11_901)
    await plog.close()


async def test_offset_for_timestamp_with_out_of_order_timestamps(plog):
    await plog.append(batch(1, ts=5000))
    await plog.append(batch(1, ts=3000))
    await plog.append(batch(1, ts=7000))
    assert await plog.offset_for_timestamp(4000) == (0, 5000)
    assert await plog.offset_for_timestamp(6000) == (2, 7000)
    assert await plog.offset_for_max_timestamp() == (2, 7000)


async def test_log_append_time_overwrites_timestamps(tmp_path):
    plog = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    before = int(time.time() * 1000)
    info = await plog.append(batch(3, ts=5))
    assert info.log_append_time >= before
    [(header, _)] = list(read_records((await plog.read(0, 1 << 20)).records[0]))  # CRC still valid
    assert header.log_append_time and header.max_timestamp == info.log_append_time
    await plog.close()


async def test_retention_by_time_deletes_old_segments_but_never_the_active_one(tmp_path):
    now = int(time.time() * 1000)
    plog = open_log(tmp_path, segment_bytes=1, retention_ms=DAY_MS)
    for ts in (now - 3 * DAY_MS, now - 2 * DAY_MS, now - 1000, now - 2 * DAY_MS):
        await plog.append(batch(1, ts=ts))
    assert [s.base_offset for s in plog.segments] == [0, 1, 2, 3]
    assert await plog.enforce_retention(now) == 2
    assert [s.base_offset for s in plog.segments] == [2, 3]  # segment 3 is old but active
    assert plog.log_start_offset == 2
    assert not (tmp_path / f"{0:020d}.log").exists() and not (tmp_path / f"{1:020d}.index").exists()
    with pytest.raises(KafkaError) as info:
        await plog.read(1, 100)
    assert info.value.code is ErrorCode.offset_out_of_range
    assert await values(plog, 2) == [(2, b"v0"), (3, b"v0")]
    assert await plog.offset_for_timestamp(0) == (2, now - 1000)
    await plog.close()


async def test_retention_by_size_keeps_the_newest_bytes(tmp_path):
    one = len(batch(1, size=100))
    plog = open_log(tmp_path, segment_bytes=2 * one, retention_bytes=3 * one, retention_ms=-1)
    for _ in range(9):
        await plog.append(batch(1, size=100))
    assert [s.base_offset for s in plog.segments] == [0, 2, 4, 6, 8]
    assert await plog.enforce_retention(int(time.time() * 1000)) == 3
    assert [s.base_offset for s in plog.segments] == [6, 8]
    assert plog.size_bytes <= 3 * one and plog.log_start_offset == 6
    await plog.close()


async def test_retention_disabled_deletes_nothing(tmp_path):
    plog = open_log(tmp_path, segment_bytes=1, retention_ms=-1, retention_bytes=-1)
    for _ in range(3):
        await plog.append(batch(1, ts=1))
    assert await plog.enforce_retention(int(time.time() * 1000)) == 0
    await plog.close()


async def test_log_start_offset_survives_reopen_after_retention(tmp_path):
    plog = open_log(tmp_path, segment_bytes=1, retention_ms=DAY_MS)
    for _ in range(3):
        await plog.append(batch(1, ts=1))
    await plog.enforce_retention(int(time.time() * 1000))
    await plog.close()
    again = open_log(tmp_path, clean=True)
    assert (again.log_start_offset, again.log_end_offset) == (2, 3)
    await again.close()


async def test_reopen_after_clean_close_and_after_crash(tmp_path):
    plog = open_log(tmp_path, segment_bytes=3 * len(batch(1)))
    for _ in range(7):
        await plog.append(batch(1))
    await plog.close()
    again = open_log(tmp_path, clean=True)
    assert again.log_end_offset == 7
    await again.append(batch(1))
    crash(again)
    third = open_log(tmp_path, clean=False)
    assert third.log_end_offset == 8
    assert [o for o, _ in await values(third)] == list(range(8))
    await third.close()


async def test_flush_interval_messages_fsyncs(tmp_path):
    plog = open_log(tmp_path, flush_messages=2)
    await plog.append(batch(1))
    assert plog._unflushed == 1
    await plog.append(batch(1))
    assert plog._unflushed == 0
    await plog.close()


async def test_waiters_wake_on_append(plog):
    import asyncio

    waiter = asyncio.get_running_loop().create_future()
    plog.add_waiter(waiter)
    assert not waiter.done()
    await plog.append(batch(1))
    await asyncio.wait_for(waiter, 10)


async def test_an_append_waits_for_the_command_the_owner_is_running(plog):
    """An idle log appends in the caller's task; a busy one queues the append behind its command."""
    import asyncio

    gate = asyncio.Event()

    ended_at: list[int] = []
    handle = plog._handle

    async def gated(message):  # the owner runs a command that waits on gate
        if message is BARRIER:
            await gate.wait()
            ended_at.append(plog.log_end_offset)
        return await handle(message)

    plog._handle = gated
    running = asyncio.ensure_future(plog.ask(BARRIER))
    for _ in range(100):
        if plog._running:
            break
        await asyncio.sleep(0)
    appending = asyncio.ensure_future(plog.append(batch(1)))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not appending.done() and plog.log_end_offset == 0
    gate.set()
    await running
    assert ended_at == [0]
    assert (await appending).base_offset == 0
    assert (await plog.append(batch(2))).base_offset == 1  # idle again


async def test_a_dead_actor_fails_waiting_callers(tmp_path):
    plog = open_log(tmp_path)
    plog._task.cancel()
    with pytest.raises(KafkaError) as info:
        await plog.append(batch(1))
    assert info.value.code is ErrorCode.not_leader_or_follower
    for seg in plog.segments:
        seg.close()


def test_segment_files_are_named_by_base_offset(tmp_path):
    plog = LocalPartitionLog(TopicPartition("t", 0), tmp_path, LogConfig())
    plog.open(clean_shutdown=True)
    assert sorted(os.listdir(tmp_path))[:3] == [f"{0:020d}.index", f"{0:020d}.log", f"{0:020d}.timeindex"]
    plog._close_sync()


async def test_issue_9_an_ended_log_answers_every_later_call(tmp_path):
    """After close (or a crash of its task) every call fails at once instead of waiting."""
    plog = open_log(tmp_path)
    await plog.append(batch(1))
    await plog.close()
    for call in (lambda: plog.append(batch(1)), lambda: plog.read(0, 100), plog.flush,
                 lambda: plog.delete_records_before(1), lambda: plog.ask(BARRIER)):
        with pytest.raises(KafkaError) as info:
            await call()
        assert info.value.code is ErrorCode.not_leader_or_follower
    await plog.close()  # closing twice is harmless


async def test_issue_9_calls_after_close_began_are_refused_and_closes_may_overlap(tmp_path):
    plog = open_log(tmp_path)
    first = asyncio.ensure_future(plog.append(batch(1)))  # queued before close: it runs
    closing = asyncio.ensure_future(plog.close())
    assert (await first).base_offset == 0  # by now close() has begun
    with pytest.raises(KafkaError) as info:
        await plog.append(batch(1))
    assert info.value.code is ErrorCode.not_leader_or_follower
    await asyncio.gather(closing, plog.close())
    assert plog.closed_cleanly


async def test_a_read_of_an_idle_log_runs_at_once_and_one_behind_an_append_waits_for_it(tmp_path):
    """query() skips the owner task's queue only when nothing is queued or running there."""
    plog = open_log(tmp_path)
    await plog.append(batch(2))
    with pytest.raises(StopIteration) as done:  # no await at all: not one event-loop turn
        plog.read(0, 1 << 20).send(None)
    assert done.value.value.high_watermark == 2
    appending = asyncio.ensure_future(plog.append(batch(3)))
    await asyncio.sleep(0)  # the append is queued, the owner task has not taken it yet
    info = await plog.read(0, 1 << 20)
    assert (info.high_watermark, sum(len(r) for r in info.records) > 0) == (5, True)
    await appending
    await plog.close()
