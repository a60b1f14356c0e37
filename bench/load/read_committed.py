"""Workload 3: read_committed consume of a topic with committed and aborted transactions.

Set-up (untimed) fills the topic with `total_mb` of 1 KiB records in
transactions of `txn_records` each, aborting every `abort_every`-th one. Keys
mark each record committed (b"c") or aborted (b"a"), so the consumer checks
that no aborted record reaches it. Timed: a read_committed consumer, assigned
to every partition from the beginning, reads until it has every committed
record. Figure: MB/s of committed records delivered.
"""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.load.common import (
    RECORD_BYTES,
    DeliveryCounter,
    Meter,
    base_config,
    create_topics,
    emit,
    fail,
    mark,
    payload,
    report_progress,
)
from bench.load.txn_produce import TXN_TIMEOUT_S, transactional_producer

STALL_S = 30.0


def fill(bootstrap: str, params: dict) -> int:
    """Write the transactions; return how many records were committed."""
    producer = transactional_producer(bootstrap, params["topic"] + "-fill", **{"linger.ms": 20})
    counter = DeliveryCounter()
    value = payload()
    txns = max(1, round(params["total_mb"] * 1e6 / RECORD_BYTES / params["txn_records"]))
    committed = 0
    tenth = max(1, txns // 10)
    for n in range(txns):
        if n and n % tenth == 0:
            report_progress(f"filling {n * 100 // txns}% of {params['total_mb']} MB")
        abort = (n + 1) % params["abort_every"] == 0
        producer.begin_transaction()
        for _ in range(params["txn_records"]):
            _produce(producer, params["topic"], b"a" if abort else b"c", value, counter)
        if abort:
            # Deliver first: abort_transaction() purges records still queued in
            # the client, and the point is to have aborted records in the log.
            producer.flush(TXN_TIMEOUT_S)
            producer.abort_transaction(TXN_TIMEOUT_S)
        else:
            producer.commit_transaction(TXN_TIMEOUT_S)
            committed += params["txn_records"]
    return committed


def _produce(producer, topic: str, key: bytes, value: bytes, counter: DeliveryCounter) -> None:  # type: ignore[no-untyped-def]
    while True:
        try:
            producer.produce(topic, value, key=key, on_delivery=counter)
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.01)  # local queue full: serve callbacks, then retry


def consume(bootstrap: str, params: dict, expected: int) -> int:
    consumer = Consumer(base_config(bootstrap, **{
        "group.id": params["topic"] + "-reader", "isolation.level": "read_committed",
        "enable.auto.commit": False, "enable.partition.eof": False}))
    consumer.assign([TopicPartition(params["topic"], p, OFFSET_BEGINNING)
                     for p in range(params["partitions"])])
    got, last_progress = 0, time.monotonic()
    while got < expected:
        # consume() waits until it has num_messages or the timeout ends: never ask
        # for more than are left, or the last batch costs a whole timeout.
        batch = consumer.consume(num_messages=min(10_000, expected - got), timeout=1.0)
        for msg in batch:
            if msg.error() is not None:
                fail(f"consumer error: {msg.error()}")
            if msg.key() != b"c":
                fail(f"read_committed consumer got an aborted record at offset {msg.offset()}")
        if batch:
            got += len(batch)
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > STALL_S:
            fail(f"no progress for {STALL_S:.0f} s at {got}/{expected} records")
    consumer.close()
    return got


def run(bootstrap: str, params: dict) -> None:
    create_topics(bootstrap, {params["topic"]: params["partitions"]})
    expected = fill(bootstrap, params)
    mark("start")
    meter = Meter()
    got = consume(bootstrap, params, expected)
    wall, _ = meter.read()
    emit({"MB/s": got * RECORD_BYTES / wall / 1e6, "records/s": got / wall}, meter,
         committed=expected)
