"""The history workload (tests/history) against three brokers over PostgreSQL and a real object store
(SeaweedFS), with the object store's faults added to the cluster's: the store killed (-9) and
started again, a broker killed at the seam between a flush object's upload and its commit
(storage/pg/object_commit.py's fault injection), 100 ms of latency between broker 1 and both
PostgreSQL and the store (toxiproxy), a broker killed with -9, the database restarted, a broker
paused past its lease. The checker judges reads between the faults and at the end: nothing
acknowledged lost, nothing aborted visible, nothing duplicated, torn, reordered or re-offset.
Only `make chaos` runs it (HISTORY_CYCLES set, many cycles): one cycle of each fault took 5 min on
this shared machine, beyond the ~60 s the normal suite gives one test; there the seam, the store's
restart and the network faults have tests of their own (test_seam_crash.py, test_object_cluster.py,
test_network_faults.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from unittest import mock

import pytest

from storage.pg.object_commit import CRASH_AFTER_PUT_ENV
from tests.e2e.cluster.conftest import WAIT_S
from tests.e2e.cluster.test_cluster_history import SEED, KillBroker, PauseBroker, RestartDatabase, Target
from tests.e2e.objects.test_network_faults import CUT, ProxiedCluster, cluster, paths, toxiproxy  # noqa: F401
from tests.history.checker import check
from tests.history.workload import WorkloadConfig, run
from tests.pg_server import PostgresServer
from tests.s3_server import S3Server
from tests.toxiproxy import Toxiproxy

pytestmark = pytest.mark.e2e

FAULTS = 6
CYCLES = int(os.environ.get("HISTORY_CYCLES", str(FAULTS)))
NODES = (1, 2, 3)


@dataclass
class CrashObjectStore:
    server: S3Server
    name: str = "kill -9 of the object store and restart"

    def inject(self, target: Target) -> None:
        self.server.crash()

    def heal(self, target: Target) -> None:
        self.server.start()  # returns once a PUT and a GET succeed


@dataclass
class KillAtTheSeam:
    """The broker restarted with the seam's fault armed kills itself right after storing its first
    flush object holding producers' records, before committing it; then it is started plainly."""

    node: int
    name: str = ""

    def __post_init__(self) -> None:
        self.name = f"kill -9 of broker {self.node} between a flush's upload and its commit"

    def inject(self, target: Target) -> None:
        target.cluster.kill(self.node)
        with mock.patch.dict(os.environ, {CRASH_AFTER_PUT_ENV: "1"}):
            # not Cluster.start, which waits for the others to see it: it may be dead by then
            target.cluster.brokers[self.node].start(timeout=WAIT_S)

    def heal(self, target: Target) -> None:
        broker = target.cluster.brokers[self.node]
        assert broker.proc is not None
        broker.proc.wait(WAIT_S)  # once it leads a partition the writers write to
        assert broker.logged("fault injection: killed after storing object")
        target.cluster.kill(self.node)
        assert broker.bad_exits == ["the broker exited by itself with code -9"]
        broker.bad_exits.clear()  # the exit this fault causes
        target.cluster.start(self.node)


@dataclass
class Latency:
    """100 ms (+-20) each way between broker CUT and both PostgreSQL and the object store."""

    toxiproxy: Toxiproxy
    paths: dict[str, str]
    name: str = f"100 ms latency between broker {CUT} and PostgreSQL and the object store"

    def inject(self, target: Target) -> None:
        for kind in ("pg", "s3"):
            self.toxiproxy.add_latency(self.paths[kind], 100, 20)

    def heal(self, target: Target) -> None:
        for kind in ("pg", "s3"):
            self.toxiproxy.heal(self.paths[kind])


@pytest.mark.skipif("HISTORY_CYCLES" not in os.environ, reason="make chaos runs it (HISTORY_CYCLES)")
@pytest.mark.timeout(400 + 90 * CYCLES)
def test_history_across_object_store_crashes_seam_kills_latency_and_broker_faults(
    cluster: ProxiedCluster, s3_server: S3Server, pg_server: PostgresServer, toxiproxy: Toxiproxy,  # noqa: F811
    paths: dict[str, str],  # noqa: F811
) -> None:
    cluster.start(*NODES)
    target = Target(cluster)
    faults = [CrashObjectStore(s3_server), KillAtTheSeam(2), Latency(toxiproxy, paths), KillBroker(3),
              RestartDatabase(pg_server), PauseBroker(1)]
    assert len(faults) == FAULTS
    config = WorkloadConfig(cycles=CYCLES, seed=SEED, hold_s=1.0, topics=("ohist-a", "ohist-b"))
    history = run(target, faults, config)
    summary = history.summary()
    print("history:", summary)
    assert summary["transactions acknowledged"] > 0 and summary["sends acknowledged"] > 0
    assert check(history) == []
