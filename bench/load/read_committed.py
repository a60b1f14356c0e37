"""Workload 3: read_committed consume of a topic with committed and aborted transactions.

Set-up (untimed) fills the topic with `total_mb` of 1 KiB records in
transactions of `txn_records` each, aborting every `abort_every`-th one. Keys
mark each record committed (b"c") or aborted (b"a"), so the consumer checks
that no aborted record reaches it. Timed: a read_committed consumer, assigned
to every partition from the beginning, reads until it has every committed
record. Figure: MB/s of committed records delivered, timed from the first batch
(the consumer's own start is in `info.first_batch_ms`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

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
    mb_per_s,
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


def reader(bootstrap: str, params: dict) -> Consumer:
    consumer = Consumer(base_config(bootstrap, **{
        "group.id": params["topic"] + "-reader", "isolation.level": "read_committed",
        "enable.auto.commit": False, "enable.partition.eof": False,
        # When its prefetch queue is full, librdkafka stops fetching for this long
        # (default 1000 ms) instead of resuming as soon as the queue drains: a
        # broker that fills the queue faster was then measured as the slower one.
        "fetch.queue.backoff.ms": 10}))
    consumer.assign([TopicPartition(params["topic"], p, OFFSET_BEGINNING)
                     for p in range(params["partitions"])])
    return consumer


@dataclass(slots=True)
class Reading:
    """Progress of the read: the rate is taken from the first batch on, so the
    consumer's own start (metadata, offsets, first fetches) is reported apart."""

    start: float = field(default_factory=time.perf_counter)
    got: int = 0
    first_at: float = 0.0
    first_count: int = 0
    last_at: float = 0.0
    longest_gap_s: float = 0.0

    def add(self, count: int, now: float) -> None:
        if not self.got:
            self.first_at, self.first_count = now, count
        else:
            self.longest_gap_s = max(self.longest_gap_s, now - self.last_at)
        self.got += count
        self.last_at = now

    def steady(self) -> tuple[int, float]:
        """Records read after the first batch, and the time they took."""
        return self.got - self.first_count, self.last_at - self.first_at


def consume(consumer: Consumer, expected: int) -> Reading:
    reading = Reading()
    per_call = min(10_000, max(100, expected // 20))  # at least ~20 batches to time
    while reading.got < expected:
        # consume() waits until it has num_messages or the timeout ends: never ask
        # for more than are left, or the last batch costs a whole timeout.
        batch = consumer.consume(num_messages=min(per_call, expected - reading.got), timeout=1.0)
        for msg in batch:
            if msg.error() is not None:
                fail(f"consumer error: {msg.error()}")
            if msg.key() != b"c":
                fail(f"read_committed consumer got an aborted record at offset {msg.offset()}")
        now = time.perf_counter()
        if batch:
            reading.add(len(batch), now)
        elif now - max(reading.last_at, reading.start) > STALL_S:
            fail(f"no progress for {STALL_S:.0f} s at {reading.got}/{expected} records")
    return reading


def run(bootstrap: str, params: dict) -> None:
    create_topics(bootstrap, {params["topic"]: params["partitions"]})
    expected = fill(bootstrap, params)
    mark("start")
    meter = Meter()
    consumer = reader(bootstrap, params)
    reading = consume(consumer, expected)
    records, seconds = reading.steady()
    if seconds <= 0:
        fail("every record came in the first batch: the topic is too small to time")
    emit({"MB/s": mb_per_s(records, seconds), "records/s": records / seconds}, meter,
         committed=expected, first_batch_ms=(reading.first_at - reading.start) * 1000,
         longest_gap_ms=reading.longest_gap_s * 1000)
    consumer.close()
