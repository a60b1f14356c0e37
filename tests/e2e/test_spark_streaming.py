"""Structured Streaming through Spark's Kafka source at read_committed against the real broker:
the pipeline's job (pipeline.job) run with availableNow and resumed from its checkpoint, and run
continuously across a kill -9 and restart of the broker."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from broker.dispatch import HANDLERS
from pipeline.job import read_balances_topic, read_transfer_files, start
from pipeline.producer import create_topics
from pipeline.transfers import Transfer, balances, committed_transfers, multiset
from pipeline.watermarks import end_offsets
from protocol.api_keys import ApiKey
from tests.e2e.spark_support import (
    job_config,
    new_topic,
    plan,
    write_transactions,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.skipif(
        ApiKey.FIND_COORDINATOR not in HANDLERS,
        reason="transactional clients need FindCoordinator (group coordinator work)",
    ),
]


def files(spark, cfg) -> list[Transfer]:  # type: ignore[no-untyped-def]
    return [Transfer.from_row(r) for r in read_transfer_files(spark, cfg)]


def run_available_now(spark, cfg) -> None:  # type: ignore[no-untyped-def]
    for q in start(spark, cfg):
        q.awaitTermination()
        assert q.exception() is None


@pytest.mark.timeout(600)
def test_available_now_then_resume_from_checkpoint_adds_exactly_the_new_commits(spark, spark_broker, tmp_path):
    bs = spark_broker.bootstrap
    topic = new_topic(bs, "stream-an")
    create_topics(bs, {"stream-an-balances": 3})
    cfg = job_config(bs, topic, tmp_path / "out", output_topic="stream-an-balances")
    first = plan(25, seed=3, prefix="a")
    write_transactions(bs, topic, first, "spark-an")
    run_available_now(spark, cfg)
    assert multiset(files(spark, cfg)) == multiset(committed_transfers(first))

    second = plan(25, seed=4, prefix="b")
    write_transactions(bs, topic, second, "spark-an")
    run_available_now(spark, cfg)
    everything = committed_transfers(first) + committed_transfers(second)
    assert multiset(files(spark, cfg)) == multiset(everything)
    assert read_balances_topic(spark, bs, "stream-an-balances") == balances(everything)


@pytest.mark.timeout(900)
def test_continuous_query_keeps_up_across_kill_9_of_the_broker(spark, spark_broker, tmp_path):
    """A running query (1 s micro-batches) while transactions commit and abort; the broker is
    killed with SIGKILL while a transaction is open and restarted on the same port; a new producer
    with the same transactional.id fences the old one (whose open transaction is aborted) and goes
    on. The files must hold every committed event once and nothing else."""
    bs = spark_broker.bootstrap
    topic = new_topic(bs, "stream-kill")
    cfg = job_config(bs, topic, tmp_path / "out", output_topic=None, interval_seconds=1.0)
    queries = start(spark, cfg)
    try:
        before = plan(30, seed=5, prefix="p")
        write_transactions(bs, topic, before, "spark-kill")
        queries[0].processAllAvailable()
        hanging = plan(1, seed=6, prefix="h")[0].transfers
        zombie = leave_transaction_open(bs, topic, "spark-kill", hanging)  # kept alive: it never ends its txn
        spark_broker.restart(kill=True)
        after = plan(30, seed=7, prefix="q")
        write_transactions(bs, topic, after, "spark-kill")
        queries[0].processAllAvailable()
        assert queries[0].exception() is None
        del zombie
    finally:
        for q in queries:
            q.stop()
    got = multiset(files(spark, cfg))
    assert got == multiset(committed_transfers(before) + committed_transfers(after))
    assert not set(hanging) & set(got)


def leave_transaction_open(bs: str, topic: str, txn_id: str, transfers: tuple[Transfer, ...]) -> Producer:
    """Produce a transaction's records and leave it open (they are in the log, beyond the LSO).
    Returns the producer, which the caller keeps until another one has fenced it."""
    producer = Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
    producer.init_transactions(60)
    producer.begin_transaction()
    for t in transfers:
        producer.produce(topic, key=t.from_account.encode(), value=t.to_json())
    assert producer.flush(60) == 0
    stable = end_offsets(bs, topic, "read_committed")
    assert stable != end_offsets(bs, topic, "read_uncommitted"), "the open transaction must hold back the LSO"
    return producer
