"""The supervisor's rules (broker/supervisor.py) with small stand-in processes that behave as a
broker does towards it (heartbeats on the pipe it gives, exit 0 on SIGTERM): a paused one is
killed and started again, a crashing one is started again with a growing back-off, a failed first
start stops the others with its status, SIGTERM stops them all. No database, no broker start-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.supervised import REPO, alive, wait_until

# argv: mode (beat | crash | fail), a file each start appends its pid to
STAND_IN = """
import os, signal, sys, time
fd = int(os.environ["EOSBROKER_HEARTBEAT_FD"])
mode, pids = sys.argv[1], sys.argv[2]
if mode != "fail":
    os.write(fd, b".")  # before the pid is written: a test that sees the pid knows a beat is on its way
with open(pids, "a") as f:
    f.write(f"{os.getpid()}\\n")
if mode == "fail":
    sys.exit(2)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
for n in range(100_000):
    os.write(fd, b".")
    if mode == "crash" and n == 2:
        sys.exit(3)
    time.sleep(0.1)
"""

RUNNER = """
import asyncio, logging, sys
from broker.supervisor import ChildSpec, supervise_specs
logging.basicConfig(level="INFO", stream=sys.stdout, format="%(levelname)s %(message)s")
specs = [ChildSpec(i, i + 1, (sys.executable, "-c", sys.argv[1], mode, f"{sys.argv[2]}.{i}"), "stand-in")
         for i, mode in enumerate(sys.argv[3:])]
sys.exit(asyncio.run(supervise_specs(specs, lease_s=1.0)))
"""


class Run:
    def __init__(self, root: Path, *modes: str) -> None:
        self.root = root
        self.proc = subprocess.Popen([sys.executable, "-c", RUNNER, STAND_IN, str(root / "pids"), *modes],
                                     cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)

    def pids(self, index: int) -> list[int]:
        path = self.root / f"pids.{index}"
        return [int(line) for line in path.read_text().split()] if path.exists() else []

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        return self.proc.returncode, out


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()



def test_a_paused_process_is_killed_and_started_again(tmp_path: Path, runs: list[Run]) -> None:
    run = Run(tmp_path, "beat", "beat")
    runs.append(run)
    wait_until(lambda: len(run.pids(0)) == 1 and len(run.pids(1)) == 1, "both started", 30)
    paused = run.pids(0)[0]
    os.kill(paused, signal.SIGSTOP)
    wait_until(lambda: len(run.pids(0)) == 2, "the paused process replaced", 30)
    wait_until(lambda: not alive(paused), "the paused process gone", 30)
    code, out = run.stop()
    assert code == 0, out
    assert f"broker process 1 of 2 (node 1, pid {paused}) sent no heartbeat for" in out
    assert f"(node 1, pid {paused}) was killed by SIGKILL; starting it again" in out
    assert len(run.pids(1)) == 1  # the other one ran on untouched
    assert "every broker process stopped cleanly" in out


def test_a_crashing_process_is_started_again_ever_later(tmp_path: Path, runs: list[Run]) -> None:
    run = Run(tmp_path, "crash")
    runs.append(run)
    wait_until(lambda: len(run.pids(0)) >= 3, "two restarts", 30)
    code, out = run.stop()
    assert code == 0, out
    assert "exited with status 3; starting it again in 0.5 s" in out
    assert "exited with status 3; starting it again in 1.0 s" in out


def test_a_failed_first_start_stops_the_others_with_its_status(tmp_path: Path, runs: list[Run]) -> None:
    run = Run(tmp_path, "beat", "fail")
    runs.append(run)
    run.proc.wait(60)
    code, out = run.stop()
    assert code == 2, out
    assert "broker process 2 of 2 (node 2, pid" in out and "failed to start (exit status 2); stopping the others" in out
    assert not any(alive(pid) for pid in run.pids(0))
