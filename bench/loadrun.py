"""Run one load-generator process against a running broker and watch the broker meanwhile.

Between the load's `MARK start` line and its `RESULT` line the harness samples
the broker's CPU time and peak resident memory, so every figure comes with the
CPU the client and the broker spent on it.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from bench.plan import CPU_PER_GB, CPU_PER_RECORD
from bench.servers import REPO_DIR, Running

if TYPE_CHECKING:
    from bench.cluster import ClusterRunning
    from bench.processes import ProcessSetRunning

RSS_SAMPLE_S = 0.1
# PSS every 10th sample (1 s): reading a process's smaps_rollup walks its page tables, ~9 ms of CPU
# for a cluster's 11 processes here against ~4 ms for their RSS, which every 0.1 s would take ~6 %
# of a core from the load being measured on a 2-core machine.
PSS_EVERY = 10


@dataclass(slots=True)
class RssSampler:
    """Samples RSS (of a broker, or of a cluster's brokers and database) from a thread until
    stopped, and PSS every PSS_EVERY samples when given pss_mb; keeps the peaks."""

    rss_mb: Callable[[], float]
    pss_mb: Callable[[], float] | None = None
    peak_mb: float = 0.0
    peak_pss_mb: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        for sample in itertools.count():
            try:
                self.peak_mb = max(self.peak_mb, self.rss_mb())
                if self.pss_mb is not None and sample % PSS_EVERY == 0:
                    self.peak_pss_mb = max(self.peak_pss_mb, self.pss_mb())
            except psutil.Error:
                return
            if self._stop.wait(RSS_SAMPLE_S):
                return

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.peak_mb


class LoadFailed(RuntimeError):
    pass


def run_load(load: str, params: dict, broker: Running | ClusterRunning | ProcessSetRunning, log_path: Path,
             timeout: float) -> dict:
    """Run `python -m bench.load LOAD`; return its RESULT plus the broker's CPU and peak RSS."""
    argv = [sys.executable, "-m", "bench.load", load, "--bootstrap", broker.bootstrap,
            "--params", json.dumps(params)]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, cwd=REPO_DIR,
                                stdin=subprocess.DEVNULL, text=True)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        result = _follow(proc, broker)
    finally:
        watchdog.cancel()
        proc.wait()
    if result is None or proc.returncode != 0:
        tail = log_path.read_text(errors="replace")[-1500:]
        raise LoadFailed(f"{load} exited {proc.returncode}: {tail.strip()}")
    return result


def broker_cost(info: dict, broker_cpu: float) -> dict[str, float]:
    """The broker's CPU per GB the load moved (info "bytes") or per record it delivered (info
    "delivered_records"), whichever the load counts."""
    cost = {}
    if info.get("bytes"):
        cost[CPU_PER_GB] = broker_cpu / (info["bytes"] / 1e9)
    if info.get("delivered_records"):
        cost[CPU_PER_RECORD] = broker_cpu / info["delivered_records"] * 1e6
    return cost


def _follow(proc: subprocess.Popen, broker: Running | ClusterRunning | ProcessSetRunning) -> dict | None:
    sampler, cpu0, wall0, result = None, 0.0, 0.0, None
    store0: float | None = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("MARK start"):
            cpu0, wall0, store0 = broker.cpu_s(), time.perf_counter(), _store_cpu_s(broker)
            sampler = RssSampler(broker.rss_mb, broker.pss_mb)
            sampler.start()
        elif line.startswith("PROGRESS "):
            print(f"[{time.strftime('%H:%M:%S')}]     {line.removeprefix('PROGRESS ').strip()}",
                  file=sys.stderr, flush=True)
        elif line.startswith("RESULT "):
            wall = time.perf_counter() - wall0
            result = json.loads(line.removeprefix("RESULT "))
            broker_cpu = broker.cpu_s() - cpu0
            result["broker_cores"] = broker_cpu / wall if wall > 0 else 0.0
            store = _store_cpu_s(broker)
            if store is not None and store0 is not None and wall > 0:
                result["store_cores"] = (store - store0) / wall  # beside broker_cores, not in it
            result["metrics"].update(broker_cost(result.get("info", {}), broker_cpu))
            result["broker_rss_peak_mb"] = sampler.stop() if sampler else 0.0
            result["broker_pss_peak_mb"] = sampler.peak_pss_mb if sampler else 0.0
            sampler = None
    if sampler is not None:
        sampler.stop()
    return result


def _store_cpu_s(broker: Running | ClusterRunning) -> float | None:
    """The object store's CPU seconds (eosbroker-os*), None for brokers without one."""
    measure = getattr(broker, "store_cpu_s", None)
    return None if measure is None else measure()
