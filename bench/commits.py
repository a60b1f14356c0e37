"""OffsetCommit load: the broker's CPU per commit and commits per second.

Starts `python -m broker` (tests/broker_process.py) with test_compaction_internal's settings, then
sends pre-encoded OffsetCommit v8 requests of one group and three partitions from several
connections at once (tests/e2e/offset_commits.py's commit_many, 256 in flight on each), as
tests/e2e/test_compaction_internal.py does with 200,000 commits. The broker's CPU (user + system,
from /proc) is read around the load only.

    python -m bench.commits [--commits 40000] [--connections 4] [--runs 3] [--py-spy FILE]

With --py-spy, py-spy records the broker (raw collapsed stacks, 200 Hz) during the last run; the
figures of that run carry py-spy's overhead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from broker.embedded import create_topic
from tests.broker_process import BrokerProcess
from tests.e2e.offset_commits import commit_many

SETTINGS = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "2",
            "offsets.topic.segment.bytes": str(1 << 20), "log.cleaner.backoff.ms": "100"}
PARTITIONS = 3
PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def one_run(commits: int, connections: int, py_spy: str | None) -> str:
    with tempfile.TemporaryDirectory() as tmp, BrokerProcess(Path(tmp) / "data", SETTINGS).start() as broker:
        assert broker.proc is not None
        create_topic(broker.bootstrap, "orders", PARTITIONS)
        commit_many(broker.bootstrap, "busy-group", "orders", PARTITIONS, 500)  # warm up
        spy = None if py_spy is None else subprocess.Popen(
            [PY_SPY, "record", "-p", str(broker.proc.pid), "-r", "200", "--format", "raw", "-o", py_spy],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if spy is not None:
            time.sleep(1)  # py-spy attaches
        each = commits // connections
        senders = [threading.Thread(target=commit_many, args=(broker.bootstrap, "busy-group", "orders",
                                                              PARTITIONS, each)) for _ in range(connections)]
        cpu, started = cpu_seconds(broker.proc.pid), time.monotonic()
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        seconds, cpu = time.monotonic() - started, cpu_seconds(broker.proc.pid) - cpu
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
            spy.wait()
    done = each * connections
    return (f"{done} commits in {seconds:.2f} s: {done / seconds:.0f} commits/s; broker CPU {cpu:.2f} s, "
            f"{cpu / done * 1e4:.2f} s per 10k commits ({cpu / done * 1e6:.0f} us each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=40_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--py-spy", default=None, help="raw py-spy output file (last run)")
    args = parser.parse_args()
    for run in range(args.runs):
        py_spy = args.py_spy if run == args.runs - 1 else None
        print(f"run {run + 1}: {one_run(args.commits, args.connections, py_spy)}", flush=True)


if __name__ == "__main__":
    main()
