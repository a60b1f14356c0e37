"""eosbroker in cluster mode for the harness: one PostgreSQL server and N brokers over it, and
for the object-store cases (eosbroker-os1/os3) a real S3 server on loopback holding the record
data: versitygw (tests/versitygw_server.py), which spends a third of SeaweedFS's CPU per GB
written, or SeaweedFS (tests/s3_server.py) with --store seaweedfs.

A ClusterRunning stands where a Running does (bootstrap, CPU, RSS, PSS, stop): its CPU and memory
are the brokers' and the database's together, since in cluster mode PostgreSQL does the storage
work that the local broker does itself (broker_pss_mb, per broker, alone leaves the database out).
The object store's CPU is counted apart (store_cpu_s), since in production it is a separate service.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.servers import HOST, REPO_DIR, Running, _spawn_and_wait, free_port, pss_mb
from tests.pg_server import PostgresServer
from tests.s3_server import LoopbackS3Server, S3Server, s3_environment
from tests.versitygw_server import VersityServer

__all__ = ("STORES", "ClusterRunning", "start_cluster")

STORES: dict[str, type[LoopbackS3Server]] = {"versitygw": VersityServer, "seaweedfs": S3Server}
BUCKET = "bench"
LEASE_MS = 10_000  # cluster.lease.ms, Kafka-like default; the failover goal is lease + 2 s


@dataclass(slots=True)
class ClusterRunning:
    name: str
    pg: PostgresServer
    url: str
    workdir: Path
    brokers: dict[int, Running] = field(default_factory=dict)
    startup_s: float = 0.0
    metrics_port: int | None = None
    store: LoopbackS3Server | None = None  # record data in this object store (eosbroker-os*)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    @property
    def log_path(self) -> Path:
        return next(iter(self.brokers.values())).log_path

    def _pg_processes(self) -> list[psutil.Process]:
        try:
            pid = int((self.pg.data / "postmaster.pid").read_text().split()[0])
            root = psutil.Process(pid)
            return [root, *root.children(recursive=True)]
        except (OSError, ValueError, psutil.Error):
            return []

    def _broker_processes(self) -> list[psutil.Process]:
        procs = []
        for b in self.brokers.values():
            try:
                procs.append(b.process())
            except psutil.Error:
                pass
        return procs

    def _processes(self) -> list[psutil.Process]:
        return self._broker_processes() + self._pg_processes()

    def store_cpu_s(self) -> float | None:
        """The object store's CPU seconds so far (None without one)."""
        pid = None if self.store is None or self.store.proc is None else self.store.proc.pid
        if pid is None:
            return None
        try:
            root = psutil.Process(pid)
            return _cpu([root, *root.children(recursive=True)])
        except psutil.Error:
            return 0.0

    def cpu_s(self) -> float:
        return _cpu(self._processes())

    def rss_mb(self) -> float:
        total = 0
        for p in self._processes():
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    def pss_mb(self) -> float:
        """The brokers' and PostgreSQL's PSS: shared_buffers once, not once per backend as in rss_mb."""
        return pss_mb(self._processes())

    def broker_pss_mb(self) -> float:
        """The brokers' PSS over their number: what one broker adds, PostgreSQL left out."""
        return pss_mb(self._broker_processes()) / max(1, len(self.brokers))

    def start_broker(self, node_id: int, port: int | None = None) -> Running:
        port = port or free_port()
        data = self.workdir / f"node-{node_id}"
        data.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "broker", "--node-id", str(node_id), "--host", HOST,
                "--port", str(port), "--data-dir", str(data),
                "--set", f"cluster.url={self.url}", "--set", f"cluster.lease.ms={LEASE_MS}"]
        env = None
        if self.store is not None:
            for key, value in self.store.broker_settings(BUCKET).items():
                argv += ["--set", f"{key}={value}"]
            env = {**os.environ, **s3_environment()}  # the store's credentials, and no cloud lookup
        running = _spawn_and_wait(f"{self.name}-{node_id}", argv, port,
                                  self.workdir / f"broker-{node_id}.log", REPO_DIR, env=env)
        self.brokers[node_id] = running
        return running

    def kill(self, node_id: int) -> None:
        """kill -9: no shutdown, the lease lapses on its own."""
        running = self.brokers[node_id]
        running.proc.kill()
        running.proc.wait()

    def revive(self) -> None:
        """Start again every broker that died (on its old port and data dir)."""
        for node_id, running in list(self.brokers.items()):
            if running.proc.poll() is not None:
                self.start_broker(node_id, running.port)

    def stop(self) -> None:
        for running in self.brokers.values():
            running.stop()
        self.pg.cleanup()
        if self.store is not None:
            self.store.cleanup()


def _cpu(processes: list[psutil.Process]) -> float:
    total = 0.0
    for p in processes:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def start_cluster(workdir: Path, brokers: int, name: str, *, store: str | None = None) -> ClusterRunning:
    """A fresh PostgreSQL server and `brokers` brokers over one new database (with a store, one of
    STORES, their record data in a fresh one under workdir)."""
    pg = PostgresServer()
    t0 = time.perf_counter()
    pg.init()
    pg.start()
    cluster = ClusterRunning(name=name, pg=pg, url=pg.create_database("bench"), workdir=workdir)
    try:
        if store is not None:
            cluster.store = STORES[store](workdir / "objects")
            cluster.store.start()
            cluster.store.make_bucket(BUCKET)
        for node_id in range(1, brokers + 1):
            cluster.start_broker(node_id)
    except BaseException:
        cluster.stop()
        raise
    cluster.startup_s = time.perf_counter() - t0
    return cluster


def pids(cluster: ClusterRunning) -> dict[str, int]:
    """node id -> broker pid, for a load that kills a leader (bench/load/failover.py)."""
    return {str(node_id): b.pid or b.proc.pid for node_id, b in cluster.brokers.items()}

