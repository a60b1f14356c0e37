"""Spark's own Kafka connector (kafka-clients 3.9 inside spark-sql-kafka) against the real broker:
batch reads at both isolation levels, the Kafka sink, and the demo's own check.
Streaming queries are in test_spark_streaming.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from broker.dispatch import HANDLERS
from pipeline.transfers import aborted_transfers, committed_transfers, multiset
from pipeline.watermarks import end_offsets
from protocol.api_keys import ApiKey
from tests.broker_process import REPO
from tests.e2e.spark_support import (
    batch_read,
    new_topic,
    plan,
    write_transactions,
)

pytestmark = [pytest.mark.e2e, pytest.mark.spark]
needs_transactions = pytest.mark.skipif(
    ApiKey.FIND_COORDINATOR not in HANDLERS,
    reason="transactional clients need FindCoordinator (group coordinator work)",
)


@needs_transactions
def test_batch_read_committed_returns_exactly_the_committed_records(spark, spark_broker):
    bs = spark_broker.bootstrap
    topic = new_topic(bs, "batch-rc")
    txns = plan(40, seed=1, prefix="b")
    write_transactions(bs, topic, txns, "spark-batch-rc")
    got = batch_read(spark, bs, topic, "read_committed")
    assert multiset(got) == multiset(committed_transfers(txns))


@needs_transactions
def test_batch_read_uncommitted_sees_aborted_records_too(spark, spark_broker):
    """The isolation level is honoured by the broker: the same topic read at read_uncommitted
    returns the aborted transactions' records as well."""
    bs = spark_broker.bootstrap
    topic = new_topic(bs, "batch-ru")
    txns = plan(30, seed=2, prefix="u", abort_ratio=0.5)
    assert aborted_transfers(txns), "the plan must abort something for this test to mean anything"
    write_transactions(bs, topic, txns, "spark-batch-ru")
    uncommitted = batch_read(spark, bs, topic, "read_uncommitted")
    committed = batch_read(spark, bs, topic, "read_committed")
    assert multiset(uncommitted) == multiset(committed_transfers(txns) + aborted_transfers(txns))
    assert multiset(committed) == multiset(committed_transfers(txns))


def test_kafka_sink_writes_what_confluent_kafka_reads(spark, spark_broker):
    bs = spark_broker.bootstrap
    topic = new_topic(bs, "spark-sink", partitions=3)
    rows = [(f"k{i % 7}", json.dumps({"n": i})) for i in range(500)]
    (
        spark.createDataFrame(rows, "key STRING, value STRING")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bs)
        .option("topic", topic)
        .save()
    )
    assert sorted(read_all(bs, topic)) == sorted((k.encode(), v.encode()) for k, v in rows)


def read_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Everything up to the end offsets, read with confluent-kafka from the beginning of each partition."""
    ends = end_offsets(bootstrap, topic, "read_committed")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "spark-sink-check",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    out: list[tuple[bytes, bytes]] = []
    positions = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + 60
    try:
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            out.append((msg.key(), msg.value()))
            positions[msg.partition()] = msg.offset() + 1
    finally:
        consumer.close()
    return out


@needs_transactions
@pytest.mark.timeout(600)
def test_demo_small_agrees_with_the_committed_transactions(tmp_path):
    """`python -m pipeline.demo --small`: its own broker, producer and Spark job; exit 0 only if
    the job's balances equal the ones computed from the committed transactions."""
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.demo", "--small", "--work-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "OK: the job's balances equal" in proc.stdout
