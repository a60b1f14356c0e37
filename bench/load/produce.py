"""Workload 1: 1 KiB records, acks=all, idempotent, linger 5 ms.

Params: topic, partitions, records. Figures: MB/s and records/s from the first
produce() call until flush() has every acknowledgement.
"""

from __future__ import annotations

from confluent_kafka import Producer

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
)

PRODUCER_SETTINGS = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "compression.type": "none",
}


def produce_all(producer: Producer, topic: str, records: int, value: bytes,
                counter: DeliveryCounter) -> None:
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=counter)
                break
            except BufferError:
                producer.poll(0.01)  # the local queue is full: serve callbacks, then retry
        producer.poll(0)
    producer.flush(120)


def run(bootstrap: str, params: dict) -> None:
    topic, records = params["topic"], params["records"]
    create_topics(bootstrap, {topic: params["partitions"]})
    producer = Producer(base_config(bootstrap, **PRODUCER_SETTINGS))
    counter = DeliveryCounter()
    value = payload()
    # One acknowledged record first, so that InitProducerId and the first
    # metadata round trips stay out of the timed part.
    produce_all(producer, topic, 1, value, DeliveryCounter())
    mark("start")
    meter = Meter()
    produce_all(producer, topic, records, value, counter)
    wall, _ = meter.read()
    if counter.error is not None or counter.acked != records:
        fail(f"acked {counter.acked}/{records}, first error {counter.error}")
    emit({"MB/s": records * RECORD_BYTES / wall / 1e6, "records/s": records / wall}, meter)
