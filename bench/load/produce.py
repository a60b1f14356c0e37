"""Workload 1: 1 KiB records, acks=all, idempotent, linger 5 ms.

Params: topic, partitions, records, and optionally client (confluent-kafka settings of another
listener: bootstrap.servers, security.protocol, ssl.*, sasl.*). Figures: MB/s and records/s from the first
produce() call until flush() has every acknowledgement.
"""

from __future__ import annotations

from confluent_kafka import Producer

from bench.load.common import (
    DeliveryCounter,
    base_config,
    create_topics,
    emit,
    mb_per_s,
    payload,
    timed_produce,
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
    # "client": another listener's address and security settings (the t1 cases).
    producer = Producer(base_config(bootstrap, **PRODUCER_SETTINGS) | params.get("client", {}))
    # One acknowledged record first, so that InitProducerId and the first
    # metadata round trips stay out of the timed part.
    produce_all(producer, topic, 1, payload(), DeliveryCounter())
    _, wall, meter = timed_produce(
        records, lambda value, counter: produce_all(producer, topic, records, value, counter))
    emit({"MB/s": mb_per_s(records, wall), "records/s": records / wall}, meter)
