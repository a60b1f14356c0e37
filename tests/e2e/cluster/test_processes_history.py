"""The history workload (tests/history) against four broker processes of one `--processes 4`
command, over PostgreSQL and as a local set sharing one data dir: transactional and idempotent
producers run while, in turn, a process is killed with -9, a process is paused with SIGSTOP (the
supervisor kills it once its lease ran out), each started again by the supervisor, and (over
PostgreSQL) the database is restarted. `make chaos` runs both with the other history tests."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.cluster.conftest import CLUSTER_SETTINGS, LEASE_MS
from tests.e2e.cluster.test_cluster_history import RestartDatabase
from tests.e2e.cluster.test_processes import start
from tests.history.checker import check
from tests.history.workload import Fault, WorkloadConfig, run
from tests.pg_server import PostgresServer
from tests.supervised import Supervised

pytestmark = pytest.mark.e2e

CYCLES = int(os.environ.get("HISTORY_CYCLES", "6"))
SEED = int(os.environ.get("HISTORY_SEED", "0"))


@dataclass
class Target:
    procs: Supervised

    @property
    def bootstrap(self) -> str:
        """Every process's port, so clients find the set whichever process is down."""
        return ",".join(f"127.0.0.1:{self.procs.port_of(n)}" for n in self.procs.node_ids)


@dataclass
class KillProcess:
    node: int
    name: str = ""
    pid: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self.name = f"kill -9 of process {self.node} (the supervisor starts it again)"

    def inject(self, target: Target) -> None:
        self.pid = target.procs.signal(self.node, signal.SIGKILL)

    def heal(self, target: Target) -> None:
        target.procs.wait_restarted(self.node, self.pid)


@dataclass
class PauseProcess:
    """SIGSTOP: the others take its partitions when its lease lapses, and the supervisor kills it
    with SIGKILL (it sent no heartbeat for a lease) and starts it again."""

    node: int
    name: str = ""
    pid: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self.name = f"SIGSTOP of process {self.node} until the supervisor replaces it"

    def inject(self, target: Target) -> None:
        self.pid = target.procs.signal(self.node, signal.SIGSTOP)
        time.sleep(LEASE_MS / 1000 * 1.5)

    def heal(self, target: Target) -> None:
        target.procs.wait_restarted(self.node, self.pid)


@pytest.mark.timeout(400 + 90 * CYCLES)
def test_history_across_process_kills_pauses_and_a_database_restart(
        pg_url: str, pg_server: PostgresServer, tmp_path: Path) -> None:
    procs = Supervised(tmp_path, 4, {**CLUSTER_SETTINGS, "cluster.url": pg_url})
    run_history(procs, [KillProcess(2), PauseProcess(3), RestartDatabase(pg_server), KillProcess(1), PauseProcess(4)])


@pytest.mark.timeout(400 + 90 * CYCLES)
def test_history_of_a_local_set_across_process_kills_and_pauses(tmp_path: Path) -> None:
    """No database: the processes share the data dir, a partition's files fenced by their lock."""
    procs = Supervised(tmp_path, 4, dict(CLUSTER_SETTINGS))
    run_history(procs, [KillProcess(2), PauseProcess(3), KillProcess(1), PauseProcess(4)])


def run_history(procs: Supervised, faults: list[Fault]) -> None:
    try:
        start(procs)
        # Four partitions a topic, so each process leads two: a reader meets a partition's end (its
        # EOF) in a fetch that another partition's append woke; a process leading one partition
        # that the writers append to without pause answers every fetch with new records.
        config = WorkloadConfig(cycles=CYCLES, seed=SEED, hold_s=1.0, topics=("phist-a", "phist-b"), partitions=4)
        history = run(Target(procs), faults, config)
        summary = history.summary()
        print("history:", summary)
        assert summary["transactions acknowledged"] > 0 and summary["sends acknowledged"] > 0
        assert check(history) == []
    finally:
        assert procs.stop() in (0, None)
    assert not procs.problems(), "a process misbehaved:\n" + "\n".join(procs.problems())
