"""Spark's Kafka source reading a compacted topic at read_committed: the offsets have gaps (records
cleaned away, aborted transactions removed, markers); Spark returns exactly the surviving committed
records, the ones confluent-kafka reads there too."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from broker.embedded import create_topic
from tests.e2e.test_compaction import TOPIC_CONFIG, wait_cleaned_to
from tests.e2e.test_compaction_txn import Written, _recorder, check, write_interleaved
from tests.e2e.txn_clients import WAIT_S, confluent_read, txn_producer

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TOPIC = "compacted-txn"  # write_interleaved's topic
SETTINGS = {"log.cleaner.backoff.ms": "50", "transaction.state.log.num.partitions": "5",
            "offsets.topic.num.partitions": "5"}


def test_spark_reads_a_compacted_topic_with_gaps_at_read_committed(spark, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    bs = broker.bootstrap
    create_topic(bs, TOPIC, 1, TOPIC_CONFIG)
    txn = txn_producer(bs, "spark-compacted", **{"batch.num.messages": 2, "linger.ms": 0})
    plain = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 0, "batch.num.messages": 2})
    written: Written = {}
    write_interleaved(txn, plain, written, range(12), aborts=True)
    for i in range(100):
        plain.produce(TOPIC, key=b"filler-%d" % (i % 10), value=b"f%d" % i, on_delivery=_recorder(written, "plain"))
    assert plain.flush(WAIT_S) == 0
    last_txn = max(o for o, (key, _, _) in written.items() if key.startswith(b"t"))
    wait_cleaned_to(broker, f"{TOPIC}-0", last_txn + 1)
    # The cleaner may go on (older filler versions in later segments) while Spark reads: compare
    # Spark with confluent-kafka reads taken just before and just after it that agree.
    for _ in range(3):
        expected = _confluent(bs, written)
        got = _spark(spark, bs)
        if _confluent(bs, written) == expected:
            break
    else:
        raise AssertionError("the log kept changing under three Spark reads")
    check(written, expected, "confluent-kafka read_committed")
    assert [o for o, _, _ in expected] != list(range(len(expected))), "the test needs offset gaps"
    assert got == expected


def _confluent(bs: str, written: Written) -> list[tuple[int, bytes, bytes]]:
    return [(o, written[o][0], v) for _, _, o, v in confluent_read(bs, {TOPIC: 1}, "read_committed", 1)]


def _spark(spark, bs: str) -> list[tuple[int, bytes, bytes]]:  # type: ignore[no-untyped-def]
    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", TOPIC)
        .option("kafka.isolation.level", "read_committed")
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("offset", "key", "value")
        .collect()
    )
    return sorted((r["offset"], bytes(r["key"]), bytes(r["value"])) for r in rows)
