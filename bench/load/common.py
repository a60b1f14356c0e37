"""Pieces the load generators share: timing, output lines, topic set-up."""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from confluent_kafka.admin import AdminClient, NewTopic

RECORD_BYTES = 1024
SETUP_TIMEOUT_S = 60.0

T = TypeVar("T")


def payload(size: int = RECORD_BYTES) -> bytes:
    # Random bytes, so that neither side gains from compressible data (no
    # compression is configured anyway).
    return os.urandom(size)


def base_config(bootstrap: str, **extra: object) -> dict[str, object]:
    config: dict[str, object] = {"bootstrap.servers": bootstrap, "client.id": "bench"}
    config.update(extra)
    return config


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    """Create topics (replication 1) and wait until each is known to the broker."""
    admin = AdminClient(base_config(bootstrap))
    new = [NewTopic(name, num_partitions=count, replication_factor=1)
           for name, count in partitions.items()]
    for future in admin.create_topics(new, operation_timeout=30).values():
        future.result(timeout=SETUP_TIMEOUT_S)
    wait_for_leaders(admin, partitions)


def wait_for_leaders(admin: AdminClient, partitions: dict[str, int]) -> None:
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    while time.monotonic() < deadline:
        meta = admin.list_topics(timeout=10)
        ready = all(
            name in meta.topics and meta.topics[name].error is None
            and len(meta.topics[name].partitions) == count
            and all(p.leader >= 0 for p in meta.topics[name].partitions.values())
            for name, count in partitions.items()
        )
        if ready:
            return
        time.sleep(0.05)  # polling the broker's metadata, not synchronising on time
    raise TimeoutError(f"topics not ready: {sorted(partitions)}")


def mark(name: str) -> None:
    """Tell the harness that a phase begins (it samples the broker's CPU then)."""
    print(f"MARK {name}", flush=True)


def report_progress(message: str) -> None:
    """A line the harness shows while a long set-up or run goes on."""
    print(f"PROGRESS {message}", flush=True)


@dataclass(slots=True)
class Meter:
    """Wall time and this process's CPU time (all threads, librdkafka's too).

    emit() must run on the thread that made the Meter (its thread_time).
    """

    wall0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=time.process_time)
    # The calling thread alone: the Python loop that calls produce()/consume().
    thread0: float = field(default_factory=time.thread_time)

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0


def emit(metrics: dict[str, float], meter: Meter, **info: object) -> None:
    wall, cpu = meter.read()
    thread = time.thread_time() - meter.thread0
    result = {"metrics": metrics, "wall_s": wall, "client_cpu_s": cpu,
              "client_cores": cpu / wall if wall > 0 else 0.0,
              "client_main_thread_cores": thread / wall if wall > 0 else 0.0, "info": info}
    print("RESULT " + json.dumps(result), flush=True)


def run_timed(threads: list[threading.Thread]) -> Meter:
    """Mark the start and run the threads to their end; the meter started with them."""
    mark("start")
    meter = Meter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return meter


def mb_per_s(records: int, seconds: float) -> float:
    return records * RECORD_BYTES / seconds / 1e6


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile; q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = min(len(ordered), max(1, math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def fail(message: str) -> None:
    print(f"bench.load: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


class DeliveryCounter:
    """Delivery callback that counts acknowledgements and remembers the first error."""

    __slots__ = ("acked", "error")

    def __init__(self) -> None:
        self.acked = 0
        self.error: object = None

    def __call__(self, err: object, _msg: object) -> None:
        if err is not None:
            if self.error is None:
                self.error = err
        else:
            self.acked += 1

    def require(self, expected: int, what: str = "") -> None:
        """End the run unless all `expected` records were acknowledged."""
        if self.error is not None or self.acked != expected:
            fail(f"{what}acked {self.acked}/{expected}, first error {self.error}")


def timed_produce(records: int, send: Callable[[bytes, DeliveryCounter], T]) -> tuple[T, float, Meter]:
    """Mark the start, time `send(value, counter)`, and end the run unless it
    had all `records` acknowledged; returns send's result, the wall time and the meter."""
    counter = DeliveryCounter()
    value = payload()
    mark("start")
    meter = Meter()
    result = send(value, counter)
    wall, _ = meter.read()
    counter.require(records)
    return result, wall, meter
