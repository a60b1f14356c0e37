"""Waiting for a topic to become stable: every partition's last stable offset (what a
read_committed reader may see) has caught up with its high watermark, so no transaction is open
and every marker is written. Transaction markers are written after EndTxn is answered, so a
producer's commit returning does not yet mean a reader can see the records."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

# A partition's leader moving (a broker of a cluster stopped, or its lease lapsed) fails a
# ListOffsets in flight with one of these; the next attempt reaches the new leader.
_LEADER_MOVED = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                           KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._TIMED_OUT})


def end_offsets(bootstrap: str, topic: str, isolation_level: str) -> dict[int, int]:
    """The latest offset per partition as ListOffsets reports it at `isolation_level`
    (the high watermark at read_uncommitted, the last stable offset at read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "pipeline-watermarks",
            "isolation.level": isolation_level,
            "enable.auto.commit": False,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[1]
            for p in sorted(meta.partitions)
        }
    finally:
        consumer.close()


def _moved(exc: KafkaException) -> bool:
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return err is not None and (err.retriable() or err.code() in _LEADER_MOVED)


def wait_until_stable(bootstrap: str, topic: str, timeout: float = 120.0) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            committed = end_offsets(bootstrap, topic, "read_committed")
            if committed == end_offsets(bootstrap, topic, "read_uncommitted"):
                return committed
        except KafkaException as exc:
            if not _moved(exc) or time.monotonic() > deadline:
                raise
            committed = {}
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic} still has open transactions: LSO {committed}")
        time.sleep(0.2)  # polling a condition with a deadline, not a timed assumption
