"""librdkafka's 0082-fetch_max_bytes against the broker: a consumer whose fetch.max.bytes (1 MB)
is below the sum of its partitions' first batches (three of ~900 KiB) still reads everything.
Kafka answers such a fetch with one batch of the first partition and nothing of the others; a
broker that sends every partition's first batch answers 2.7 MB, which librdkafka refuses
(above receive.message.max.bytes), drops the connection and asks again, for ever."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.e2e

PARTITIONS = 3
PER_PARTITION = 3
VALUE = b"v" * (900 * 1024)


def test_fetch_max_bytes_below_the_first_batches_of_all_partitions(broker) -> None:  # type: ignore[no-untyped-def]
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("fmb", PARTITIONS, 1)])["fmb"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for _ in range(PER_PARTITION):
            producer.produce("fmb", VALUE, partition=p)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fmb", "enable.auto.commit": False,
                         "max.partition.fetch.bytes": 20_000_000, "fetch.max.bytes": 1_000_000,
                         "receive.message.max.bytes": 1_000_512})
    errors: list[str] = []
    consumer.assign([CTopicPartition("fmb", p, 0) for p in range(PARTITIONS)])
    got = {p: 0 for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60  # a guard against the endless refetch, not a speed limit
    try:
        while sum(got.values()) < PARTITIONS * PER_PARTITION and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error():
                errors.append(str(msg.error()))
                continue
            assert len(msg.value()) == len(VALUE)
            got[msg.partition()] += 1
    finally:
        consumer.close()
    assert got == {p: PER_PARTITION for p in range(PARTITIONS)}, errors
