"""Share groups (issue 35) with Kafka's own 4.x clients: delivery rate and lock-expiry redelivery.

q1: Kafka's ShareConsumerPerformance (kafka-tools) with 1 or 4 share consumers, implicit
acknowledgement, over a topic filled beforehand (untimed) with the group reading from the earliest
offset. q2: bench/load/java/ShareRedelivery.java, two members of one group, one holding a record
past its lock: from the lock's expiry (the holder's receipt of the record plus the lock duration) to
the record reaching the other member.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import threading
import time
from pathlib import Path

from bench.load.common import RECORD_BYTES, create_topics, fail, mark, percentile
from bench.load.java_txn import compile_java
from bench.load.kafka_perf import _emit, _java, fill_topic

SOURCE = Path(__file__).parent / "java" / "ShareRedelivery.java"
CONSUME_TIMEOUT_MS = 60_000  # ShareConsumerPerformance gives up after this long without a record
SAMPLE_TIMEOUT_S = 120.0  # beyond the lock: JVM starts, joins, a redelivery far too late


def parse_share_perf(out: str) -> tuple[int, float]:
    """ShareConsumerPerformance's summary (--hide-header): start.time, end.time, data.consumed.in.MB,
    MB.sec, nMsg.sec, data.consumed.in.nMsg, ... -> (records, records/s)."""
    lines = [line for line in out.strip().splitlines() if line.count(",") >= 5 and "share consumer" not in line]
    if not lines:
        raise ValueError(f"no summary in ShareConsumerPerformance's output: {out[-800:]}")
    fields = [f.strip() for f in lines[-1].split(",")]
    return int(fields[5]), float(fields[4])


def share_perf(bootstrap: str, params: dict) -> None:
    """params: topic, partitions, records, consumers."""
    topic, records, group = params["topic"], params["records"], params["topic"] + "-share"
    fill_topic(bootstrap, topic, params["partitions"], records, transactional=False)
    done = subprocess.run(["java", "-Xmx128m", "-cp", compile_java(SOURCE), "ShareRedelivery", "configure", bootstrap,
                           group, "share.auto.offset.reset=earliest"], capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"setting {group}'s share.auto.offset.reset failed: {done.stderr[-1500:]}")
    mark("start")
    out, wall, cpu = _java("org.apache.kafka.tools.ShareConsumerPerformance", "--bootstrap-server", bootstrap,
                           "--topic", topic, "--group", group, "--num-records", str(records),
                           "--threads", str(params["consumers"]), "--timeout", str(CONSUME_TIMEOUT_MS),
                           "--hide-header")
    try:
        consumed, rate = parse_share_perf(out)
    except ValueError as exc:
        fail(str(exc))
    if consumed < records:
        fail(f"ShareConsumerPerformance got {consumed} of {records} records")
    _emit({"records/s": rate}, wall, cpu, delivered_records=consumed, consumers=params["consumers"],
          consumed_mb=consumed * RECORD_BYTES / 1e6)


def share_redelivery(bootstrap: str, params: dict) -> None:
    """params: topic, samples, lock_ms. Each sample on a topic and group of its own."""
    cp = compile_java(SOURCE)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    mark("start")
    t0 = time.perf_counter()
    ms = [_redelivery(cp, bootstrap, f"{params['topic']}-{i}", params["lock_ms"]) for i in range(params["samples"])]
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    _emit({"redelivery p50 ms": percentile(ms, 50), "redelivery max ms": max(ms)}, wall, cpu,
          samples=len(ms), lock_ms=params["lock_ms"], redelivery_ms=ms)


def _redelivery(cp: str, bootstrap: str, topic: str, lock_ms: int) -> float:
    """One record held by one member until its lock runs out, then delivered to another: ms from the
    holder's receipt + lock_ms to the other's receipt. The holder's JVM is stopped (SIGSTOP) once it
    has the record, so that its client fetches nothing more (a share consumer fetches ahead on its own
    thread: it would take the released record back into its buffer); its session outlives the lock."""
    group = topic + "-share"
    create_topics(bootstrap, {topic: 1})
    java = ["java", "-Xmx128m", "-cp", cp, "ShareRedelivery"]
    holder = subprocess.Popen([*java, "hold", bootstrap, topic, group, str(lock_ms)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    receiver: subprocess.Popen[str] | None = None
    watchdog = threading.Timer(lock_ms / 1000 + SAMPLE_TIMEOUT_S, lambda: [p.kill() for p in (holder, receiver) if p])
    watchdog.start()
    try:
        held_us, _ = _arrival(holder, "HELD")
        holder.send_signal(signal.SIGSTOP)
        receiver = subprocess.Popen([*java, "receive", bootstrap, topic, group], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        received_us, count = _arrival(receiver, "RECEIVED")
        receiver.wait()
    finally:
        watchdog.cancel()
        holder.kill()
        holder.wait()
    if count < 2:
        fail(f"{topic}: the other member got the record with delivery count {count}, not a redelivery")
    return (received_us - held_us) / 1000 - lock_ms


def _arrival(proc: subprocess.Popen[str], word: str) -> tuple[int, int]:
    """(epoch us, delivery count) from the JVM's `word` line; ends the run if it exits first."""
    assert proc.stdout is not None and proc.stderr is not None
    for line in proc.stdout:
        if line.startswith(word + " "):
            _, us, count = line.split()
            return int(us), int(count)
    fail(f"ShareRedelivery {word.lower()} ended without a record: {proc.stderr.read()[-1500:]}")
    raise AssertionError  # fail() exits
