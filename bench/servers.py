"""Start and stop the two brokers under test on loopback ports.

Apache Kafka: a single-node KRaft broker+controller formatted with
kafka.tools.StorageTool and run with kafka.Kafka from the jars that
bench/pom.xml copies into bench/kafka-dist/. eosbroker: `python -m broker`
from this checkout. Each start gets a fresh data directory.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.probe import wait_answering
from bench.security import Security, add_scram_user
from storage.meta_properties import random_uuid

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
KAFKA_DIST = BENCH_DIR / "kafka-dist"
HOST = "127.0.0.1"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
# The flags bin/kafka-server-start.sh passes, with a smaller heap.
KAFKA_JVM_FLAGS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                   "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                   "-Djava.awt.headless=true")


def pss_mb(processes: Iterable[psutil.Process]) -> float:
    """The processes' proportional set size (smaps_rollup's Pss) summed: a page shared by n of them
    counts 1/n in each, so PostgreSQL's shared_buffers, mapped by every backend, counts once in the
    sum where RSS counts it once per backend. A process that ended meanwhile counts 0."""
    total = 0
    for p in processes:
        try:
            total += p.memory_full_info().pss
        except psutil.Error:
            pass
    return total / 2**20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass(slots=True)
class Running:
    """A started broker: its process, where it listens, and how long it took."""

    name: str
    proc: subprocess.Popen
    port: int
    startup_s: float
    log_path: Path
    pid: int = 0  # the broker's own process (proc may be a profiler wrapping it)
    metrics_port: int | None = None  # eosbroker's Prometheus endpoint, when on
    security: Security | None = None  # SSL and SASL_SSL listeners, for the t cases
    argv: list[str] = field(default_factory=list)  # how it was started, for restart()
    cwd: Path | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def process(self) -> psutil.Process:
        return psutil.Process(self.pid or self.proc.pid)

    def rss_mb(self) -> float:
        return self.process().memory_info().rss / 2**20

    def pss_mb(self) -> float:
        return pss_mb([self.process()])

    def broker_pss_mb(self) -> float:
        """PSS per broker: the one broker's (as for a cluster, whose PostgreSQL it leaves out)."""
        return self.pss_mb()

    def cpu_s(self) -> float:
        times = self.process().cpu_times()
        return times.user + times.system

    def stop(self) -> None:
        if self.proc.poll() is None:
            # SIGTERM to the broker itself: a wrapping profiler then writes its file and exits.
            os.kill(self.pid or self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


    def restart(self, unclean: bool) -> float:
        """Stop (SIGTERM and wait, or kill -9) and start again on the same data; seconds from
        spawning to the first answered ApiVersions."""
        if unclean:
            self.proc.kill()
            self.proc.wait()
        else:
            self.stop()
        again = _spawn_and_wait(self.name, self.argv, self.port, self.log_path, self.cwd or REPO_DIR, append=True)
        self.proc, self.pid = again.proc, again.pid
        return again.startup_s


def _spawn_and_wait(name: str, argv: list[str], port: int, log_path: Path, cwd: Path,
                    append: bool = False, env: dict[str, str] | None = None) -> Running:
    with open(log_path, "ab" if append else "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                stdin=subprocess.DEVNULL, env=env)
    running = Running(name, proc, port, 0.0, log_path, argv=argv, cwd=cwd)
    try:
        wait_answering(proc, HOST, port, START_TIMEOUT_S)
    except BaseException as exc:
        running.stop()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{name} did not start: {exc}\n--- {log_path} ---\n{tail}") from exc
    running.startup_s = time.perf_counter() - t0
    running.pid = _innermost(proc.pid)
    return running


def _innermost(pid: int) -> int:
    """The process at the bottom of a wrapper chain (py-spy -> python), or pid itself."""
    proc = psutil.Process(pid)
    while children := proc.children():
        proc = children[0]
    return proc.pid


# Settings both brokers run with: a group's first rebalance starts at once (Kafka's default waits
# 3 s for more members, which would decide s2-group50's time for whichever broker kept it).
COMMON_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


def start_eosbroker(workdir: Path, repo: Path = REPO_DIR, profile: Path | None = None,
                    native: bool = False, metrics: bool = False, name: str = "eosbroker",
                    secure: bool = False, settings: dict[str, str] | None = None) -> Running:
    """Start `python -m broker`; with `profile`, under py-spy writing collapsed stacks there;
    with `metrics`, with its Prometheus endpoint on a free port; `secure`: with SSL and SASL_SSL
    listeners too (bench/security.py)."""
    port = free_port()
    data = workdir / "eos-data"
    data.mkdir(parents=True)
    argv = [sys.executable, "-m", "broker", "--host", HOST, "--port", str(port),
            "--data-dir", str(data)]
    security = Security.make(workdir, free_port) if secure else None
    if security is not None:
        argv += [arg for key, value in security.broker_settings(HOST, port).items()
                 for arg in ("--set", f"{key}={value}")]
    metrics_port = free_port() if metrics else None
    if metrics_port is not None:
        argv += ["--set", f"metrics.port={metrics_port}"]
    for key, value in (COMMON_SETTINGS | (settings or {})).items():
        argv += ["--set", f"{key}={value}"]
    if profile is not None:
        argv = [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw",
                "--rate", "200", *(["--native"] if native else ["--nonblocking"]),
                "-o", str(profile), "--", *argv]
    running = _spawn_and_wait(name, argv, port, workdir / f"{name}.log", repo)
    running.metrics_port = metrics_port
    _secure(running, security)
    return running


def _secure(running: Running, security: Security | None) -> None:
    running.security = security
    if security is not None:
        add_scram_user(running.bootstrap)


class Scraper:
    """Scrape /metrics every `interval` seconds while the block runs, as Prometheus would (a
    context manager; does nothing without a port)."""

    def __init__(self, port: int | None, interval: float) -> None:
        self._port = port
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scraper", daemon=True)
        self.scrapes = 0

    def __enter__(self) -> Scraper:
        if self._port is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            conn = http.client.HTTPConnection(HOST, self._port, timeout=10)
            try:
                conn.request("GET", "/metrics")
                conn.getresponse().read()
                self.scrapes += 1
            except OSError:
                pass  # the broker is busy or stopping; the next scrape tries again
            finally:
                conn.close()


def ensure_kafka_dist() -> None:
    """Copy the Kafka jars with Maven unless they are there already."""
    if not list(KAFKA_DIST.glob("kafka_2.13-*.jar")):
        subprocess.run(["mvn", "-B", "-q", "-f", str(BENCH_DIR / "pom.xml"),
                        "dependency:copy-dependencies"], check=True)


def kafka_version() -> str:
    jars = sorted(KAFKA_DIST.glob("kafka_2.13-*.jar"))
    return jars[-1].name.removeprefix("kafka_2.13-").removesuffix(".jar") if jars else "?"


def kafka_properties(port: int, controller_port: int, log_dir: Path, security: Security | None = None) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "min.insync.replicas": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        **COMMON_SETTINGS,
    }
    if security is not None:
        extra = security.broker_settings(HOST, port)
        settings |= extra | {
            "listeners": extra["listeners"] + f",CONTROLLER://{HOST}:{controller_port}",
            "advertised.listeners": extra["listeners"],
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"}
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def start_kafka(workdir: Path, heap: str = "512m", secure: bool = False) -> Running:
    ensure_kafka_dist()
    port, controller_port = free_port(), free_port()
    security = Security.make(workdir, free_port) if secure else None
    props = workdir / "server.properties"
    props.write_text(kafka_properties(port, controller_port, workdir / "kafka-logs", security))
    classpath = str(KAFKA_DIST / "*")
    cluster_id = random_uuid()  # never starting with "-", which StorageTool would read as an option
    fmt = subprocess.run(["java", "-cp", classpath, "kafka.tools.StorageTool", "format",
                          "-t", cluster_id, "-c", str(props)], capture_output=True, text=True)
    if fmt.returncode != 0:
        raise RuntimeError(f"StorageTool format failed:\n{fmt.stdout}{fmt.stderr}")
    jvm = security.jvm_options if security is not None else ()
    argv = ["java", f"-Xmx{heap}", f"-Xms{heap}", *KAFKA_JVM_FLAGS, *jvm, "-cp", classpath,
            "kafka.Kafka", str(props)]
    running = _spawn_and_wait("kafka", argv, port, workdir / "kafka.log", workdir)
    _secure(running, security)
    return running


def java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return out.splitlines()[0] if out else "?"


def machine() -> dict[str, object]:
    return {"cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": sys.version.split()[0], "java": java_version()}
