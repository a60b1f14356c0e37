"""Workload 5 with Apache Kafka's Java producer (kafka-clients 4.x from kafka-tools), under
Transactions V1 and V2 (issue 14): bench/load/java/TxnLatency.java sets the finalized
transaction.version with Admin.updateFeatures, then runs one-record transactions; the level is
what picks the protocol of a 4.x producer, on eosbroker as on Kafka. The source is compiled with
javac on first use into bench/.work/java/, once per source and kafka-clients jar.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.load.common import create_topics, fail, mark, percentile
from bench.load.kafka_perf import TOOLS, _emit
from bench.servers import BENCH_DIR

SOURCE = Path(__file__).parent / "java" / "TxnLatency.java"
# Compiled helpers, one directory per source, kafka-clients jar and javac: a run's five Java cases
# (and every later run) use one compile each instead of a javac start per case (seconds under load).
CLASSES = BENCH_DIR / ".work" / "java"


def compile_java(source: Path = SOURCE) -> str:
    """javac `source` against kafka-clients, unless done already; the classpath to run it with."""
    jars = sorted(TOOLS.glob("kafka-clients-*.jar"))
    if not jars:
        fail(f"kafka-clients is not in {TOOLS}: run `make kafka-tools`")
    javac = os.path.realpath(shutil.which("javac") or "javac")
    key = hashlib.sha256(b"\0".join([source.read_bytes(), jars[-1].name.encode(), javac.encode()])).hexdigest()
    out = CLASSES / f"{source.stem}-{key[:16]}"
    if not out.is_dir():
        CLASSES.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CLASSES) as scratch:
            classes = Path(scratch) / "classes"
            done = subprocess.run([javac, "-nowarn", "-cp", str(jars[-1]), "-d", str(classes), str(source)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                fail(f"javac failed: {done.stderr[-1500:]}")
            with contextlib.suppress(OSError):  # a process that compiled it at the same time put it there
                os.rename(classes, out)  # whole, so no process sees a half-written directory
    return f"{out}:{TOOLS}/*"


def _run_java(cp: str, bootstrap: str, topic: str, params: dict) -> tuple[list[str], str, int]:
    """The JVM's stdout lines, stderr and exit code; its MARK line is passed on as it comes, so the
    harness samples the broker from the timed loop on (set-up and JVM start are not timed)."""
    proc = subprocess.Popen(["java", "-Xmx256m", "-cp", cp, "TxnLatency", bootstrap, topic, str(params["txns"]),
                             str(params["transaction_version"])], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stderr is not None
    lines = []
    for line in proc.stdout:
        if line.startswith("MARK start"):
            mark("start")
        lines.append(line.rstrip("\n"))
    stderr = proc.stderr.read()
    return lines, stderr, proc.wait(timeout=3600)


def run(bootstrap: str, params: dict) -> None:
    """params: topic, partitions, txns, transaction_version (1 or 2)."""
    topic = params["topic"]
    create_topics(bootstrap, {topic: params["partitions"]})
    cp = compile_java()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    lines, stderr, code = _run_java(cp, bootstrap, topic, params)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        fail(f"TxnLatency exited {code}: {(stderr or chr(10).join(lines))[-1500:]}")
    ms = [float(line.split()[1]) for line in lines if line.startswith("LATENCY_MS ")]
    wall = next((float(line.split()[1]) for line in lines if line.startswith("WALL_S ")), time.perf_counter() - t0)
    if len(ms) != params["txns"]:
        fail(f"{len(ms)} of {params['txns']} transactions reported: {lines[-5:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    _emit({"p50 ms": percentile(ms, 50), "p99 ms": percentile(ms, 99), "txns/s": len(ms) / wall}, wall, cpu,
          txns=len(ms), transaction_version=params["transaction_version"])
