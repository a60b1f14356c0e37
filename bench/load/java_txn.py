"""Workload 5 with Apache Kafka's Java producer (kafka-clients 4.x from kafka-tools), under
Transactions V1 and V2 (issue 14): bench/load/java/TxnLatency.java sets the finalized
transaction.version with Admin.updateFeatures, then runs one-record transactions; the level is
what picks the protocol of a 4.x producer, on eosbroker as on Kafka. The source is compiled with
javac on first use into a temporary directory.
"""

from __future__ import annotations

import resource
import subprocess
import tempfile
import time
from pathlib import Path

from bench.load.common import create_topics, fail, mark, percentile
from bench.load.kafka_perf import TOOLS, _emit

SOURCE = Path(__file__).parent / "java" / "TxnLatency.java"


def compile_java(out: Path, source: Path = SOURCE) -> str:
    """javac `source` against kafka-clients into `out`; the classpath to run it with."""
    jars = sorted(TOOLS.glob("kafka-clients-*.jar"))
    if not jars:
        fail(f"kafka-clients is not in {TOOLS}: run `make kafka-tools`")
    done = subprocess.run(["javac", "-nowarn", "-cp", str(jars[-1]), "-d", str(out), str(source)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"javac failed: {done.stderr[-1500:]}")
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
    with tempfile.TemporaryDirectory() as tmp:
        cp = compile_java(Path(tmp))
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
