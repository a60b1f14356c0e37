"""Kafka's own load tools as load generators (issue 15): ProducerPerformance, ConsumerPerformance and
EndToEndLatency from kafka-tools (tools/kafka-tools/, `make kafka-tools`), run in a JVM so that no
figure is set by a Python client loop.

Each prints its summary in Kafka's words; this wrapper parses it into a RESULT line. The client
CPU is the JVM's (this wrapper only waits), from the children's rusage.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.load.common import RECORD_BYTES, base_config, create_topics, fail, mark, mb_per_s, payload, report_progress
from bench.servers import REPO_DIR

TOOLS = REPO_DIR / "tools" / "kafka-tools"
# "500000 records sent, 72864.1 records/sec (71.16 MB/sec), 340.1 ms avg latency, 720.0 ms max
# latency, 330 ms 50th, 600 ms 95th, 700 ms 99th, 718 ms 99.9th."
_PRODUCER = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                       r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")
# With --warmup-records, a second summary: "400000 steady state records sent, ... 43 ms 99th, ...".
_STEADY = re.compile(r"(\d+) steady state records sent, .*?(\d+) ms 99th")
# The records of a run that its steady-state figures leave out: the load tool's JVM compiles its
# send path in the first second or so, which can raise the whole run's p99.
WARMUP_SHARE = 5
_E2E_AVG = re.compile(r"Avg latency: ([\d.]+) ms")
_E2E_PCT = re.compile(r"Percentiles: 50th = (\d+), 99th = (\d+), 99.9th = (\d+)")


def _java(main: str, *args: str) -> tuple[str, float, float]:
    """Run a tool's main class; its stdout, wall seconds and CPU seconds."""
    if not list(TOOLS.glob("kafka-tools-*.jar")):
        fail(f"Kafka's tools are not in {TOOLS}: run `make kafka-tools`")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(["java", "-Xmx512m", "-cp", f"{TOOLS}/*", main, *args], capture_output=True, text=True,
                          timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        fail(f"{main} exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, wall, cpu


def _emit(metrics: dict[str, float], wall: float, cpu: float, **info: object) -> None:
    print("RESULT " + json.dumps({"metrics": metrics, "wall_s": wall, "client_cpu_s": cpu,
                                  "client_cores": cpu / wall if wall > 0 else 0.0,
                                  "client_main_thread_cores": 0.0, "info": info}), flush=True)


def producer_perf(bootstrap: str, params: dict) -> None:
    """params: topic, partitions, records, batch_size, linger_ms, and transaction_ms (optional)."""
    topic = params["topic"]
    create_topics(bootstrap, {topic: params["partitions"]})
    args = _perf_args(bootstrap, topic, params["records"], params)
    if params.get("transaction_ms"):
        args += ["--transaction-duration-ms", str(params["transaction_ms"])]
    mark("start")
    out, wall, cpu = _java("org.apache.kafka.tools.ProducerPerformance", *args)
    # The last match is the run's summary; earlier ones are interval reports.
    m = ([None, *_PRODUCER.finditer(out)])[-1]
    if m is None:
        fail(f"no summary in ProducerPerformance's output: {out[-800:]}")
    steady = _STEADY.search(out)
    if steady is None:
        fail(f"no steady-state summary in ProducerPerformance's output: {out[-800:]}")
    sent = int(m[1])
    _emit({"MB/s": float(m[3]) * 2**20 / 1e6, "records/s": float(m[2]), "p99 ms": float(m[8]),
           "steady p99 ms": float(steady[2])}, wall, cpu,
          bytes=sent * RECORD_BYTES, p50_ms=float(m[6]), avg_ms=float(m[4]), steady_records=int(steady[1]))


def _perf_args(bootstrap: str, topic: str, records: int, params: dict) -> list[str]:
    props = ["acks=all", "enable.idempotence=true", f"batch.size={params['batch_size']}",
             f"linger.ms={params.get('linger_ms', 5)}", "max.in.flight.requests.per.connection=5"]
    return ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
            "--record-size", str(RECORD_BYTES), "--throughput", "-1",
            "--warmup-records", str(records // WARMUP_SHARE), "--command-property", *props]


def producer_perf_many(bootstrap: str, params: dict) -> None:
    """params: topic, partitions, records (in all), batch_size, linger_ms, producers: that many
    ProducerPerformance JVMs at once, each its share of the records over every partition. The
    aggregate MB/s is all their bytes over the longest one's send time (they start together)."""
    topic, producers = params["topic"], params["producers"]
    if not list(TOOLS.glob("kafka-tools-*.jar")):
        fail(f"Kafka's tools are not in {TOOLS}: run `make kafka-tools`")
    create_topics(bootstrap, {topic: params["partitions"]})
    each = params["records"] // producers
    argv = ["java", "-Xmx256m", "-cp", f"{TOOLS}/*", "org.apache.kafka.tools.ProducerPerformance",
            *_perf_args(bootstrap, topic, each, params)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    mark("start")
    t0 = time.perf_counter()
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(producers)]
    outs = [p.communicate(timeout=3600)[0] for p in procs]
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = [([None, *_PRODUCER.finditer(out)])[-1] for out in outs]
    bad = [out for p, out, m in zip(procs, outs, found, strict=True) if p.returncode != 0 or m is None]
    if bad:
        fail(f"{len(bad)} of {producers} ProducerPerformance runs failed: {bad[0][-800:]}")
    summaries = [m for m in found if m is not None]
    sent = sum(int(m[1]) for m in summaries)
    seconds = max(int(m[1]) / float(m[2]) for m in summaries)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    _emit({"MB/s": sent * RECORD_BYTES / seconds / 1e6, "records/s": sent / seconds,
           "p99 ms": max(float(m[8]) for m in summaries)}, wall, cpu,
          bytes=sent * RECORD_BYTES, producers=producers, send_s=seconds)


def _produce(producer: Any, topic: str, value: bytes, partition: int) -> None:
    """produce(), waiting while librdkafka's queue is full (a broker slowed by a loaded machine
    acknowledges more slowly than this loop queues)."""
    while True:
        try:
            producer.produce(topic, value, partition=partition)
            return
        except BufferError:
            producer.poll(0.05)


def fill_topic(bootstrap: str, topic: str, partitions: int, records: int, transactional: bool) -> None:
    """Write the records a consume case reads (untimed), with confluent-kafka."""
    from confluent_kafka import Producer

    create_topics(bootstrap, {topic: partitions})
    extra: dict[str, object] = {"linger.ms": 20, "batch.size": 1 << 20, "enable.idempotence": True}
    if transactional:
        extra["transactional.id"] = f"{topic}-fill"
    producer = Producer(base_config(bootstrap, **extra))
    value = payload()
    if transactional:
        producer.init_transactions(30)
    for start in range(0, records, 5000):
        if transactional:
            producer.begin_transaction()
        for i in range(start, min(records, start + 5000)):
            _produce(producer, topic, value, i % partitions)
            if i % 1000 == 0:
                producer.poll(0)
        if transactional:
            producer.commit_transaction(60)
    if producer.flush(120) != 0:
        fail("fill: records left unacknowledged")
    report_progress(f"filled {topic} with {records} records")


def consumer_perf(bootstrap: str, params: dict) -> None:
    """params: topic, partitions, records, isolation (read_committed | read_uncommitted)."""
    topic, records = params["topic"], params["records"]
    committed = params.get("isolation") == "read_committed"
    fill_topic(bootstrap, topic, params["partitions"], records, transactional=committed)
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
        f.write(f"isolation.level={params.get('isolation', 'read_uncommitted')}\nauto.offset.reset=earliest\n")
        config = f.name
    mark("start")
    try:
        out, wall, cpu = _java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap,
                               "--topic", topic, "--num-records", str(records), "--command-config", config,
                               "--timeout", "60000", "--hide-header")
    finally:
        Path(config).unlink(missing_ok=True)
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    fields = [f.strip() for f in out.strip().splitlines()[-1].split(",")]
    try:
        consumed, fetch_ms = int(fields[4]), float(fields[7])
    except (IndexError, ValueError):
        fail(f"cannot read ConsumerPerformance's output: {out[-800:]}")
    if consumed < records:
        fail(f"ConsumerPerformance read {consumed} of {records} records")
    seconds = fetch_ms / 1000
    _emit({"MB/s": mb_per_s(consumed, seconds), "records/s": consumed / seconds}, wall, cpu,
          bytes=consumed * RECORD_BYTES)


def end_to_end_latency(bootstrap: str, params: dict) -> None:
    """params: topic, records. Kafka's EndToEndLatency: one record at a time, acks=all."""
    topic = params["topic"]
    create_topics(bootstrap, {topic: 1})
    mark("start")
    out, wall, cpu = _java("org.apache.kafka.tools.EndToEndLatency", bootstrap, topic, str(params["records"]),
                           "all", str(RECORD_BYTES))
    avg, pct = _E2E_AVG.search(out), _E2E_PCT.search(out)
    if avg is None or pct is None:
        fail(f"cannot read EndToEndLatency's output: {out[-800:]}")
    _emit({"p50 ms": float(pct[1]), "p99 ms": float(pct[2])}, wall, cpu, records=params["records"],
          avg_ms=float(avg[1]), p999_ms=float(pct[3]))
