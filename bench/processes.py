"""eosbroker as N processes from one command (issue 34) for the harness: `python -m broker --processes N`.

A ProcessSetRunning stands where a Running does (bootstrap, CPU, RSS, PSS, stop). Its CPU and memory are
every process's together: the supervisor, its broker processes and anything they start.

The set runs on one local data dir. A broker that refuses that in one line (exit 2, "needs
cluster.url": those before processes could share a local dir) gets the same set over one
PostgreSQL server instead (tests/pg_server.py, as `--cluster` does), named `<name>-pg`, whose
server's CPU and memory are counted with the brokers'; the harness says so.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.cluster import LEASE_MS
from bench.probe import wait_answering
from bench.servers import COMMON_SETTINGS, HOST, REPO_DIR, START_TIMEOUT_S, pss_mb
from tests.pg_server import PostgresServer

__all__ = ("ProcessSetRunning", "actual_name", "consecutive_free_ports", "parse_process_counts", "process_set_names",
           "refusal", "start_process_set")

SINGLE = "eosbroker"
PG_SUFFIX = "-pg"
# The supervisor gives its processes 60 s to stop cleanly before SIGKILL; wait a little longer.
STOP_TIMEOUT_S = 75.0
REFUSED = "needs cluster.url"  # the broker's one-line refusal of --processes without one
# Set after the first refusal, so later rounds go straight to PostgreSQL: the refusal's line.
_local_refused: str | None = None


def parse_process_counts(spec: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4): distinct counts of at least 1, in the order given."""
    try:
        counts = tuple(int(part) for part in spec.split(","))
    except ValueError:
        raise ValueError(f"--processes takes counts like 1,2,4, not {spec!r}") from None
    if any(n < 1 for n in counts) or len(set(counts)) != len(counts):
        raise ValueError(f"--processes takes distinct counts of at least 1, not {spec!r}")
    return counts


def process_set_names(counts: tuple[int, ...]) -> dict[str, int]:
    """Broker names of a --processes run: 1 is the plain one-process eosbroker, N is eosbroker-pN."""
    return {SINGLE if n == 1 else f"{SINGLE}-p{n}": n for n in counts}


def actual_name(planned: str, seen: set[str]) -> str:
    """The name a set ran under: planned, or planned-pg after the local set was refused."""
    return planned + PG_SUFFIX if planned + PG_SUFFIX in seen else planned


def consecutive_free_ports(count: int) -> int:
    """A base port with the count ports from it free on HOST (each process takes base + i)."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            base = sock.getsockname()[1]
        if base + count <= 65535 and all(_free(base + i) for i in range(count)):
            return base
    raise RuntimeError(f"no {count} consecutive free ports on {HOST}")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


@dataclass(slots=True)
class ProcessSetRunning:
    name: str
    proc: subprocess.Popen
    port: int  # process i listens on port + i
    processes: int
    log_path: Path
    pg: PostgresServer | None = None
    startup_s: float = 0.0
    metrics_port: int | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{self.port + i}" for i in range(self.processes))

    def _processes(self, database: bool = True) -> list[psutil.Process]:
        procs: list[psutil.Process] = []
        roots = [self.proc.pid]
        if database and self.pg is not None and (self.pg.data / "postmaster.pid").exists():
            roots.append(int((self.pg.data / "postmaster.pid").read_text().split()[0]))
        for pid in roots:
            try:
                root = psutil.Process(pid)
                procs += [root, *root.children(recursive=True)]
            except (psutil.Error, ValueError):
                pass
        return procs

    def _sum(self, read: Callable[[psutil.Process], float]) -> float:
        total = 0.0
        for p in self._processes():
            try:
                total += read(p)
            except psutil.Error:
                pass  # a process that ended between the listing and the reading
        return total

    def cpu_s(self) -> float:
        return self._sum(lambda p: (lambda t: t.user + t.system)(p.cpu_times()))

    def rss_mb(self) -> float:
        return self._sum(lambda p: p.memory_info().rss) / 2**20

    def pss_mb(self) -> float:
        return pss_mb(self._processes())

    def broker_pss_mb(self) -> float:
        """The set's PSS without PostgreSQL's (the supervisor's included) over its processes."""
        return pss_mb(self._processes(database=False)) / self.processes

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.pg is not None:
            self.pg.cleanup()


def _argv(processes: int, port: int, data: Path, url: str | None) -> list[str]:
    argv = [sys.executable, "-m", "broker", "--processes", str(processes), "--host", HOST, "--port", str(port),
            "--data-dir", str(data)]
    settings = dict(COMMON_SETTINGS)
    if url is not None:
        settings |= {"cluster.url": url, "cluster.lease.ms": str(LEASE_MS)}
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    return argv


def _spawn(name: str, processes: int, workdir: Path, url: str | None) -> ProcessSetRunning:
    port = consecutive_free_ports(processes)
    data = workdir / f"{name}-data"
    data.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{name}.log"
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(_argv(processes, port, data, url), stdout=log, stderr=subprocess.STDOUT,
                                cwd=REPO_DIR, stdin=subprocess.DEVNULL)
    running = ProcessSetRunning(name, proc, port, processes, log_path)
    try:
        for i in range(processes):
            wait_answering(proc, HOST, port + i, START_TIMEOUT_S)
    except BaseException:
        running.stop()
        raise
    running.startup_s = time.perf_counter() - t0
    return running


def refusal(log_path: Path) -> str | None:
    """The broker's line refusing several processes without cluster.url, if the log has it."""
    lines = log_path.read_text(errors="replace").splitlines()
    return next((line for line in lines if REFUSED in line), None)


def start_process_set(workdir: Path, processes: int, name: str,
                      say: Callable[[str], None] = print) -> ProcessSetRunning:
    """`processes` broker processes on one local data dir; over PostgreSQL as `<name>-pg` if the
    broker refuses that (once refused, later calls go to PostgreSQL at once)."""
    global _local_refused
    if _local_refused is None:
        try:
            return _spawn(name, processes, workdir, None)
        except RuntimeError:
            refused = refusal(workdir / f"{name}.log")
            if refused is None:
                raise
            _local_refused = refused
            say(f"  local --processes {processes} refused ({refused.strip()}); running the set over "
                f"PostgreSQL as {name}{PG_SUFFIX}")
    pg = PostgresServer()
    t0 = time.perf_counter()
    pg.init()
    pg.start()
    try:
        running = _spawn(name + PG_SUFFIX, processes, workdir, pg.create_database("bench"))
    except BaseException:
        pg.cleanup()
        raise
    running.pg = pg
    running.startup_s = time.perf_counter() - t0
    return running
