"""Client helpers shared by the transaction e2e tests: real confluent-kafka and kafka-python."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def kafka_module() -> Any:
    # kafka-python 3 reads its schemas with a deprecated importlib API on first import.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
    return kafka

WAIT_S = 30.0


def create_topics(bootstrap: str, topics: Iterable[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
    for f in futures.values():
        f.result(WAIT_S)


def txn_producer(bootstrap: str, txn_id: str, **extra: object) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(WAIT_S)
    return p


def plain_producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})


Rows = list[tuple[str, int, int, bytes]]


def confluent_read(bootstrap: str, topics: dict[str, int], isolation: str, expected: int, **extra: Any) -> Rows:
    """(topic, partition, offset, value) of every visible record, once `expected` arrived and
    every partition reached its end (so nothing beyond `expected` hides behind). `extra`: more
    client settings (security)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"} | extra)
    parts = [CTopicPartition(t, p, 0) for t, n in topics.items() for p in range(n)]
    c.assign(parts)
    got: list[tuple[str, int, int, bytes]] = []
    at_eof: set[tuple[str, int]] = set()
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline and not (len(got) >= expected and len(at_eof) == len(parts)):
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    at_eof.add((m.topic(), m.partition()))
                    continue
                raise KafkaException(m.error())
            at_eof.discard((m.topic(), m.partition()))
            got.append((m.topic(), m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return got


def kafka_python_read(bootstrap: str, topics: dict[str, int], expected: int) -> list[tuple[str, int, int, bytes]]:
    kafka = kafka_module()
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", group_id=None,
                            enable_auto_commit=False, auto_offset_reset="earliest")
    parts = [kafka.TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
    c.assign(parts)
    c.seek_to_beginning()
    got: list[tuple[str, int, int, bytes]] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            for tp, records in c.poll(timeout_ms=200).items():
                got += [(tp.topic, tp.partition, r.offset, r.value) for r in records]
            ends = c.end_offsets(parts)
            if len(got) >= expected and all(c.position(tp) >= ends[tp] for tp in parts):
                break
    finally:
        c.close()
    return got


def end_offsets(bootstrap: str, topic: str, partitions: int, isolation_level: str) -> dict[int, int]:
    """ListOffsets(latest) per partition at the isolation level, through kafka-python."""
    kafka = kafka_module()
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level, group_id=None)
    try:
        parts = [kafka.TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: off for tp, off in c.end_offsets(parts).items()}
    finally:
        c.close()


def last_stable_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    return end_offsets(bootstrap, topic, partitions, "read_committed")


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    return end_offsets(bootstrap, topic, partitions, "read_uncommitted")


def wait_until(predicate, what: str, timeout: float = WAIT_S) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def kafka_admin(bootstrap: str) -> Any:
    kafka_module()  # imports kafka with its deprecation warning silenced
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap)


def kafka_tp(topic: str, partition: int) -> Any:
    return kafka_module().TopicPartition(topic, partition)
