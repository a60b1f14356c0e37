"""log.cleaner.threads workers cleaning different partitions at once, and Kafka's sharing of the
dedupe buffer, the I/O buffers and the I/O rate among them (CleanerConfig)."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from storage.api import TopicPartition
from storage.cleaner.clean_pass import CleanResult, CleanTask, run_clean_pass
from storage.cleaner.log_cleaner import CleanerConfig, LogCleaner
from storage.cleaner.offset_map import BYTES_PER_MAP_ENTRY
from storage.cleaner.throttler import UNLIMITED
from storage.log_manager import LogManager
from tests.storage.cleaner.helpers import kv


def test_each_worker_gets_its_share_of_the_buffers_and_the_rate():
    one = CleanerConfig(dedupe_buffer_size=128 << 20)
    assert one.map_capacity == int((128 << 20) * 0.9) // BYTES_PER_MAP_ENTRY
    four = CleanerConfig(threads=4, dedupe_buffer_size=128 << 20, dedupe_buffer_load_factor=0.5,
                         io_buffer_size=512 << 10, io_max_bytes_per_second=4e6)
    assert four.map_capacity == (32 << 20) // 2 // BYTES_PER_MAP_ENTRY
    task = four.for_worker(CleanTask(directory="", segments=(), first_dirty_offset=0, first_uncleanable_offset=0,
                                     aborted=(), active_producers={}, segment_bytes=1, index_interval_bytes=1,
                                     delete_retention_ms=0, map_capacity=1, now_ms=0))
    # Kafka's: a read and a write buffer of ioBufferSize / numThreads / 2 each; the rate shared out
    assert (task.io_buffer_size, task.io_max_bytes_per_second) == (64 << 10, 1e6)
    assert CleanerConfig().for_worker(task).io_max_bytes_per_second == UNLIMITED
    assert CleanerConfig(dedupe_buffer_size=1).map_capacity == 1


async def _dirty_logs(tmp_path, partitions: int) -> LogManager:
    logs = LogManager(tmp_path, {"segment.bytes": 300, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01})
    logs.load()
    logs.start()
    await logs.create_topic("t", partitions)
    for p in range(partitions):
        plog = logs.get_log(TopicPartition("t", p))
        for i in range(30):
            await plog.append(kv(b"k%d" % (i % 4), b"v%d" % i))
    return logs


class _Meeting(LogCleaner):
    """Each pass waits, in its worker thread, until `parties` passes are under way at once."""

    def __init__(self, logs: LogManager, config: CleanerConfig, parties: int) -> None:
        super().__init__(logs, config, executor=lambda: ThreadPoolExecutor(config.threads))
        self.barrier = threading.Barrier(parties, timeout=60)
        self.cleaned: list[str] = []

    async def _clean(self, task: CleanTask) -> CleanResult:
        def meet_then_clean(task: CleanTask) -> CleanResult:
            self.barrier.wait()  # BrokenBarrierError: the passes did not run at once
            self.cleaned.append(task.directory)
            return run_clean_pass(task)

        return await self.in_worker(meet_then_clean, task)


async def test_two_threads_clean_two_partitions_at_once(tmp_path):
    logs = await _dirty_logs(tmp_path, 2)
    cleaner = _Meeting(logs, CleanerConfig(threads=2, backoff_ms=10), parties=2)
    first, second = await asyncio.gather(cleaner.clean_dirtiest(), cleaner.clean_dirtiest())
    assert first is not None and second is not None
    assert {first.partition, second.partition} == {"t-0", "t-1"}
    await cleaner.stop()
    await logs.close()


async def test_two_threads_never_clean_one_partition_at_once(tmp_path):
    logs = await _dirty_logs(tmp_path, 1)
    cleaner = _Meeting(logs, CleanerConfig(threads=2, backoff_ms=10), parties=1)
    first, second = await asyncio.gather(cleaner.clean_dirtiest(), cleaner.clean_dirtiest())
    assert [first is None, second is None].count(True) == 1  # the other found its partition taken
    assert len(cleaner.cleaned) == 1
    await cleaner.stop()
    await logs.close()


@pytest.mark.parametrize("threads", [1, 3])
async def test_the_background_loop_runs_one_task_per_thread(tmp_path, threads):
    logs = await _dirty_logs(tmp_path, 3)
    cleaner = LogCleaner(logs, CleanerConfig(threads=threads, backoff_ms=10),
                         executor=lambda: ThreadPoolExecutor(threads))
    cleaner.start()
    assert len([t for t in asyncio.all_tasks() if t.get_name().startswith("log-cleaner-")]) == threads
    while cleaner.stats.passes < 3:
        await asyncio.sleep(0.01)
    assert set(cleaner.stats.by_partition) == {"t-0", "t-1", "t-2"}
    await cleaner.stop()
    await logs.close()
