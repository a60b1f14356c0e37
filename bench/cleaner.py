"""The log cleaner's figures (issue 13): its throughput, where it should run, and what it saves
at restart.

    python -m bench.cleaner [--mb 64] [--commits 1000000] [--skip-restart]

1. Throughput: a compacted partition of --mb MB (1,000 keys, ~100-byte values, 50-record batches,
   8 MiB segments; uncompressed, lz4 and zstd) cleaned by one pass, in this process: MB of log read
   per second of wall clock and per CPU second (the robust figure on a shared machine), records per
   CPU second (what bounds the compressed codecs: their values compress ~15x here), with the load
   average.
2. Thread or process: the same pass run beside an event loop whose probe task sleeps 1 ms in a
   loop, once on a worker thread (asyncio.to_thread) and once in a worker process (the broker's
   choice): p99 and max lateness of the probe's wake-ups, i.e. how long produce and fetch would
   stall.
3. Restart: --commits offset commits of one group written straight into a broker's
   __consumer_offsets partition (the coordinator's own record encoding), then the broker started
   before and after its cleaner compacted them: seconds to the first answered ApiVersions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from protocol.records import Record, build_batch
from storage.api import AppendOrigin, TopicPartition
from storage.cleaner.clean_pass import CleanResult, CleanTask, run_clean_pass
from storage.cleaner.log_cleaner import process_executor
from storage.log_config import LogConfig
from storage.partition_log import LocalPartitionLog

KEYS = 1000
PER_BATCH = 50
CODECS = {"lz4": 3, "zstd": 4}


async def fill(directory: Path, mb: int, codec: str) -> LocalPartitionLog:
    config = LogConfig(cleanup_policy="compact", segment_bytes=8 << 20, min_cleanable_dirty_ratio=0.01)
    plog = LocalPartitionLog(TopicPartition("bench", 0), directory, config)
    plog.open(clean_shutdown=True)
    plog.start()
    i = 0
    while plog.size_bytes < mb << 20:
        records = [Record(key=b"key-%06d" % ((i + n) % KEYS), value=b"value-%d-" % (i + n) + b"v" * 90,
                          timestamp=1000) for n in range(PER_BATCH)]
        batch = build_batch(records) if codec == "none" else _compressed(records, CODECS[codec])
        await plog.append(bytes(batch), AppendOrigin.CLIENT)
        i += PER_BATCH
    return plog


def _compressed(records: list[Record], codec: int) -> bytes:
    """A batch of records in codec (the cleaner keeps each batch's codec)."""
    from protocol.record_batch import RecordBatchHeader
    from storage.cleaner.batch_filter import RawRecord, build_filtered_batch, decode_raw_records

    plain = bytes(build_batch(records))
    header = RecordBatchHeader.parse(plain)
    raw: list[RawRecord] = decode_raw_records(plain, header)
    coded = header._replace(attributes=header.attributes | codec)
    return build_filtered_batch(plain, coded, raw, None)


async def plan(plog: LocalPartitionLog) -> CleanTask:
    found = await plog.plan_cleaning(int(time.time() * 1000), 1 << 22)
    assert found is not None
    return found.task


async def probe_during(run: Any) -> tuple[float, dict[str, float]]:
    """Run the coroutine run while a probe measures the event loop's lateness; (seconds, lateness ms)."""
    late: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            late.append((time.perf_counter() - t - 0.001) * 1000)

    task = asyncio.create_task(probe())
    started = time.perf_counter()
    await run
    seconds = time.perf_counter() - started
    done.set()
    await task
    late.sort()
    return seconds, {"p50": statistics.median(late), "p99": late[int(len(late) * 0.99)], "max": late[-1]}


async def throughput_and_placement(mb: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for codec in ("none", "lz4", "zstd"):
        work = Path(tempfile.mkdtemp(prefix="cleaner-bench-"))
        try:
            plog = await fill(work / "bench-0", mb, codec)
            task = await plan(plog)
            size = sum(s.size for s in task.segments)
            started, cpu = time.perf_counter(), time.process_time()
            result: CleanResult = run_clean_pass(task)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            out[f"throughput {codec}"] = {"MB read": size / 1e6, "s": seconds, "MB/s": size / 1e6 / seconds,
                                          "CPU s": cpu, "MB/CPU s": size / 1e6 / cpu,
                                          "MB written": result.bytes_written / 1e6,
                                          "records/CPU s": result.records_read / cpu,
                                          "load average": os.getloadavg()[0]}
            if codec == "none":
                out["on a thread"] = (await probe_during(asyncio.to_thread(run_clean_pass, task)))[1]
                executor = process_executor()
                await asyncio.get_running_loop().run_in_executor(executor, time.sleep, 0)  # start the worker
                loop = asyncio.get_running_loop()
                out["in a process"] = (await probe_during(loop.run_in_executor(executor, run_clean_pass, task)))[1]
                executor.shutdown()
            await plog.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cleaner")
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--commits", type=int, default=1_000_000)
    p.add_argument("--skip-restart", action="store_true")
    args = p.parse_args(argv)
    figures = asyncio.run(throughput_and_placement(args.mb))
    if not args.skip_restart:
        from bench.cleaner_restart import restart_figures
        figures["restart"] = restart_figures(args.commits)
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
