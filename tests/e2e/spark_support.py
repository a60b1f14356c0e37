"""Helpers of the Spark e2e tests: write transfer transactions with confluent-kafka and read them
back through Spark's Kafka source. The fixtures `spark` and `spark_broker` are in conftest.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.job import JobConfig, parse_transfers
from pipeline.producer import ProduceStats, create_topics, produce_plan
from pipeline.transfers import PlannedTxn, Transfer, plan_transactions
from pipeline.watermarks import wait_until_stable


def plan(count: int, *, seed: int, prefix: str, abort_ratio: float = 0.3) -> list[PlannedTxn]:
    return plan_transactions(
        count=count, events_per_txn=3, accounts=6, abort_ratio=abort_ratio, seed=seed, prefix=prefix
    )


def write_transactions(bootstrap: str, topic: str, txns: list[PlannedTxn], txn_id: str) -> ProduceStats:
    """Commit or abort each planned transaction, then wait until every marker is written."""
    stats = produce_plan(bootstrap, topic, txns, transactional_id=txn_id)
    wait_until_stable(bootstrap, topic)
    return stats


def new_topic(bootstrap: str, topic: str, partitions: int = 3) -> str:
    create_topics(bootstrap, {topic: partitions})
    return topic


def batch_read(spark: Any, bootstrap: str, topic: str, isolation_level: str = "read_committed",
               **kafka_options: str) -> list[Transfer]:
    """`spark.read.format("kafka")` from earliest to latest at `isolation_level`; `kafka_options`
    are more consumer settings (security.protocol, sasl.jaas.config, ...), without the "kafka." prefix."""
    raw = (
        spark.read.format("kafka")
        .options(**{f"kafka.{key}": value for key, value in kafka_options.items()})
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("kafka.isolation.level", isolation_level)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    return [Transfer.from_row(r.asDict()) for r in parse_transfers(raw).collect()]


def job_config(bootstrap: str, topic: str, out: Path, **kw: Any) -> JobConfig:
    return JobConfig(bootstrap=bootstrap, topics=[topic], out_dir=out, **kw)
