"""Restart time of a broker whose __consumer_offsets holds many offset commits, before and after
the cleaner compacted them (bench/cleaner.py's third figure)."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.group.log import offset_commit_record
from coordinator.group.offsets import OffsetAndMetadata
from protocol.records import build_batch
from storage.api import AppendOrigin, TopicPartition
from storage.log_config import LogConfig
from storage.partition_log import LocalPartitionLog

from . import servers
from .servers import HOST, REPO_DIR, Running, _spawn_and_wait, free_port

GROUP = "busy-group"
PARTITIONS = 3
PER_BATCH = 10  # commits per batch: the replayed records, not the batches, dominate loading
SEGMENT_BYTES = 8 << 20


def _argv(data: Path, port: int, cleaner: bool) -> list[str]:
    sets = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
            "offsets.topic.segment.bytes": str(SEGMENT_BYTES), "log.cleaner.enable": str(cleaner).lower(),
            "log.cleaner.backoff.ms": "100"}
    argv = [sys.executable, "-m", "broker", "--host", HOST, "--port", str(port), "--data-dir", str(data)]
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    return argv


async def _write_commits(data: Path, commits: int) -> None:
    config = LogConfig(cleanup_policy="compact", segment_bytes=SEGMENT_BYTES)
    plog = LocalPartitionLog(TopicPartition("__consumer_offsets", 0), data / "__consumer_offsets-0", config)
    plog.open(clean_shutdown=True)
    plog.start()
    now = int(time.time() * 1000)
    for first in range(0, commits, PER_BATCH):
        records = [offset_commit_record(GROUP, TopicPartition("orders", n % PARTITIONS),
                                        OffsetAndMetadata(committed_offset=n, commit_timestamp=now), timestamp=now)
                   for n in range(first, min(first + PER_BATCH, commits))]
        await plog.append(bytes(build_batch(records)), AppendOrigin.COORDINATOR)
    await plog.close()


def _size(data: Path) -> int:
    return sum(f.stat().st_size for f in (data / "__consumer_offsets-0").glob("*.log"))


def _wait_cleaned(log_path: Path, timeout: float = 1800.0) -> None:
    deadline = time.monotonic() + timeout
    while "cleaned __consumer_offsets-0" not in log_path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise TimeoutError("the cleaner did not compact __consumer_offsets-0")
        time.sleep(0.5)


def restart_figures(commits: int) -> dict[str, Any]:
    # Replaying a million uncompacted commits is the slow start this figure is about.
    servers.START_TIMEOUT_S = max(servers.START_TIMEOUT_S, 1800.0)
    work = Path(tempfile.mkdtemp(prefix="cleaner-restart-"))
    data, port = work / "data", free_port()
    try:
        broker: Running = _spawn_and_wait("eosbroker", _argv(data, port, False), port, work / "a.log", REPO_DIR)
        broker.stop()  # the internal topics exist now
        asyncio.run(_write_commits(data, commits))
        size_before = _size(data)
        broker = _spawn_and_wait("eosbroker", _argv(data, port, False), port, work / "b.log", REPO_DIR)
        before_s = broker.startup_s
        broker.stop()
        broker = _spawn_and_wait("eosbroker", _argv(data, port, True), port, work / "c.log", REPO_DIR)
        _wait_cleaned(work / "c.log")
        broker.stop()
        size_after = _size(data)
        broker = _spawn_and_wait("eosbroker", _argv(data, port, False), port, work / "d.log", REPO_DIR)
        after_s = broker.startup_s
        broker.stop()
        return {"commits": commits, "restart s before": before_s, "restart s after": after_s,
                "__consumer_offsets MB before": size_before / 1e6, "__consumer_offsets MB after": size_after / 1e6}
    finally:
        shutil.rmtree(work, ignore_errors=True)
