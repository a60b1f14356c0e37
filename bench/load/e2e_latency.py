"""Workload 6: end-to-end latency, producer to read_committed consumer.

An idempotent acks=all producer (linger 0) sends `rate` records a second for
`seconds`, each stamped with the send time; a read_committed consumer in the
same process takes the difference on receipt. Records are non-transactional,
so they become visible at the high watermark. Figures: p50/p99 in ms.
"""

from __future__ import annotations

import struct
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench.load.common import Meter, base_config, create_topics, emit, fail, mark, payload, percentile

STAMP = struct.Struct(">q")
STALL_S = 30.0


def pace(producer: Producer, topic: str, rate: int, seconds: float, errors: list) -> None:
    filler = payload(1024 - STAMP.size)
    interval = 1.0 / rate
    start = time.perf_counter()
    for n in range(int(rate * seconds)):
        due = start + n * interval
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)  # the load's own schedule: a fixed send rate
        producer.produce(topic, STAMP.pack(time.perf_counter_ns()) + filler,
                         on_delivery=lambda err, _m: err and errors.append(err))
        producer.poll(0)
    producer.flush(60)


def receive(consumer: Consumer, expected: int) -> list[float]:
    latencies: list[float] = []
    last = time.monotonic()
    while len(latencies) < expected:
        # consume(num_messages=n) would hold records back until n arrive or the
        # timeout ends; poll() hands each over at once.
        msg = consumer.poll(0.5)
        if msg is not None:
            if msg.error() is not None:
                fail(f"consumer error: {msg.error()}")
            now = time.perf_counter_ns()
            latencies.append((now - STAMP.unpack_from(msg.value())[0]) / 1e6)
            last = time.monotonic()
        if time.monotonic() - last > STALL_S:
            fail(f"no progress for {STALL_S:.0f} s at {len(latencies)}/{expected}")
    return latencies


def warm_pair(bootstrap: str, topic: str) -> tuple[Producer, Consumer]:
    """A producer that has its producer id and a consumer that has seen its first record.

    Both start-up costs (InitProducerId, ListOffsets, the first fetch session)
    stay out of the timed part.
    """
    consumer = Consumer(base_config(bootstrap, **{
        "group.id": topic + "-e2e", "isolation.level": "read_committed",
        "enable.auto.commit": False, "fetch.wait.max.ms": 500,
        "auto.offset.reset": "earliest"}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    producer = Producer(base_config(bootstrap, **{"acks": "all", "enable.idempotence": True,
                                                  "linger.ms": 0}))
    producer.produce(topic, b"warm-up")
    producer.flush(60)
    deadline = time.monotonic() + STALL_S
    while not consumer.consume(num_messages=1, timeout=0.5):
        if time.monotonic() > deadline:
            fail("the warm-up record never reached the consumer")
    return producer, consumer


def run(bootstrap: str, params: dict) -> None:
    topic, rate, seconds = params["topic"], params["rate"], params["seconds"]
    create_topics(bootstrap, {topic: 1})
    producer, consumer = warm_pair(bootstrap, topic)
    errors: list = []
    sender = threading.Thread(target=pace, args=(producer, topic, rate, seconds, errors))
    mark("start")
    meter = Meter()
    sender.start()
    latencies = receive(consumer, int(rate * seconds))
    sender.join()
    if errors:
        fail(f"delivery error: {errors[0]}")
    emit({"p50 ms": percentile(latencies, 50), "p99 ms": percentile(latencies, 99)}, meter,
         records=len(latencies))
    consumer.close()
