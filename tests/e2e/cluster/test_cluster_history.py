"""The Jepsen-style history workload (tests/history) against three brokers over one PostgreSQL:
transactional and idempotent producers run while, in turn, a broker is killed with -9 and
restarted, a broker is paused with SIGSTOP past its lease and resumed, and the database is
restarted with `pg_ctl restart -m immediate`. Reads between the faults and at the end are checked
for lost, aborted-but-visible, duplicated, torn, reordered and re-offset records. `make chaos`
runs many cycles (HISTORY_CYCLES)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import pytest

from tests.e2e.cluster.conftest import LEASE_MS, Cluster
from tests.history.checker import check
from tests.history.workload import WorkloadConfig, run
from tests.pg_server import PostgresServer

pytestmark = pytest.mark.e2e

CYCLES = int(os.environ.get("HISTORY_CYCLES", "6"))
SEED = int(os.environ.get("HISTORY_SEED", "0"))
NODES = (1, 2, 3)


@dataclass
class Target:
    """What the workload needs of a cluster: a bootstrap list naming every broker, so clients
    find the cluster whichever brokers are down."""

    cluster: Cluster

    @property
    def bootstrap(self) -> str:
        return ",".join(self.cluster.brokers[n].bootstrap for n in NODES)


@dataclass
class KillBroker:
    node: int
    name: str = ""

    def __post_init__(self) -> None:
        self.name = f"kill -9 of broker {self.node} and restart"

    def inject(self, target: Target) -> None:
        target.cluster.kill(self.node)

    def heal(self, target: Target) -> None:
        target.cluster.start(self.node)


@dataclass
class PauseBroker:
    """SIGSTOP for longer than the lease: the others take its partitions and shards; resumed, its
    late appends must be refused by the epoch check and it rejoins."""

    node: int
    name: str = ""

    def __post_init__(self) -> None:
        self.name = f"SIGSTOP of broker {self.node} past its lease, then SIGCONT"

    def inject(self, target: Target) -> None:
        target.cluster.brokers[self.node].pause()
        time.sleep(LEASE_MS / 1000 * 1.5)

    def heal(self, target: Target) -> None:
        target.cluster.brokers[self.node].resume()


@dataclass
class RestartDatabase:
    pg: PostgresServer
    name: str = "pg_ctl restart -m immediate"

    def inject(self, target: Target) -> None:
        self.pg.restart("immediate")

    def heal(self, target: Target) -> None:
        pass  # restart() returns once the server accepts connections again


@pytest.mark.timeout(400 + 90 * CYCLES)
def test_history_across_broker_kills_pauses_and_a_database_restart(cluster: Cluster, pg_server: PostgresServer):
    cluster.start(*NODES)
    target = Target(cluster)
    faults = [KillBroker(2), PauseBroker(3), RestartDatabase(pg_server), KillBroker(1), PauseBroker(2)]
    config = WorkloadConfig(cycles=CYCLES, seed=SEED, hold_s=1.0, topics=("chist-a", "chist-b"))
    history = run(target, faults, config)
    summary = history.summary()
    print("history:", summary)
    assert summary["transactions acknowledged"] > 0 and summary["sends acknowledged"] > 0
    assert check(history) == []
