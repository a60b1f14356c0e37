"""Workload 5: one-record transactions from `producers` producers at once.

Each producer (a thread with its own transactional.id; librdkafka releases the
GIL while it waits) repeats begin, produce one 1 KiB record, commit, for
`txns_each` transactions. Latency is begin_transaction() to the return of
commit_transaction(), which includes the record's delivery and EndTxn.
Figures: p50/p99 of that latency in ms, transactions/s over all producers.
"""

from __future__ import annotations

import threading
import time

from bench.load.common import create_topics, emit, fail, payload, percentile, run_timed
from bench.load.txn_produce import TXN_TIMEOUT_S, transactional_producer


def one_producer(producer, topic: str, count: int, value: bytes, out: list[float],  # type: ignore[no-untyped-def]
                 errors: list[BaseException]) -> None:
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            producer.begin_transaction()
            producer.produce(topic, value)
            producer.commit_transaction(TXN_TIMEOUT_S)
            out.append(time.perf_counter() - t0)
    except BaseException as exc:  # reported by the main thread
        errors.append(exc)


def run(bootstrap: str, params: dict) -> None:
    topic, count = params["topic"], params["txns_each"]
    create_topics(bootstrap, {topic: params["partitions"]})
    producers = [transactional_producer(bootstrap, f"{topic}-p{i}", **{"linger.ms": 0})
                 for i in range(params["producers"])]
    value = payload()
    latencies: list[float] = []
    errors: list[BaseException] = []
    threads = [threading.Thread(target=one_producer, args=(p, topic, count, value, latencies, errors))
               for p in producers]
    meter = run_timed(threads)
    wall, _ = meter.read()
    if errors:
        fail(f"{len(errors)} producer(s) failed, first: {errors[0]!r}")
    ms = [s * 1000 for s in latencies]
    emit({"p50 ms": percentile(ms, 50), "p99 ms": percentile(ms, 99),
          "txns/s": len(ms) / wall}, meter, txns=len(ms))
