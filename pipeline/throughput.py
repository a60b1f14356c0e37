"""python -m pipeline.throughput: how fast the streaming job reads from a broker.

Fills a topic with committed (and some aborted) transfer transactions unless it already holds
data, then runs the job's read and parse (`format("kafka")` at the chosen isolation level, JSON
parsing) as one availableNow query into Spark's `noop` sink, and prints rows per second over the
query's wall time. Works against any Kafka-protocol broker, so the same command measures eosbroker
and Apache Kafka.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .job import DEFAULT_JARS_DIR, JobConfig, kafka_source_options, parse_transfers, spark_session
from .producer import create_topics, produce_plan
from .transfers import plan_transactions
from .watermarks import end_offsets, wait_until_stable


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pipeline.throughput", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", default="throughput")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--transactions", type=int, default=2000)
    p.add_argument("--events-per-txn", type=int, default=100)
    p.add_argument("--abort-ratio", type=float, default=0.1)
    p.add_argument("--isolation-level", default="read_committed")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jars-dir", type=Path, default=DEFAULT_JARS_DIR)
    return p.parse_args(argv)


def fill(args: argparse.Namespace) -> None:
    create_topics(args.bootstrap, {args.topic: args.partitions})
    if any(end_offsets(args.bootstrap, args.topic, "read_uncommitted").values()):
        return
    plan = plan_transactions(
        count=args.transactions,
        events_per_txn=args.events_per_txn,
        accounts=100,
        abort_ratio=args.abort_ratio,
        seed=11,
    )
    started = time.monotonic()
    stats = produce_plan(args.bootstrap, args.topic, plan, transactional_id=f"throughput-{args.topic}")
    wait_until_stable(args.bootstrap, args.topic)
    print(
        f"wrote {stats.events_committed} committed and {stats.events_aborted} aborted events "
        f"in {time.monotonic() - started:.1f} s"
    )


def measure(spark, cfg: JobConfig) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    raw = spark.readStream.format("kafka").options(**kafka_source_options(cfg)).load()
    query = (
        parse_transfers(raw)
        .writeStream.format("noop")
        .option("checkpointLocation", cfg.checkpoint(f"noop-{time.monotonic_ns()}"))
        .trigger(availableNow=True)
        .start()
    )
    started = time.monotonic()
    query.awaitTermination()
    seconds = time.monotonic() - started
    return sum(p["numInputRows"] for p in query.recentProgress), seconds


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fill(args)
    spark = spark_session(args.jars_dir, app_name="eosbroker-throughput")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    cfg = JobConfig(
        bootstrap=args.bootstrap,
        topics=[args.topic],
        out_dir=Path(f"/tmp/pipeline-throughput-{args.topic}"),
        isolation_level=args.isolation_level,
    )
    try:
        for n in range(args.rounds):
            rows, seconds = measure(spark, cfg)
            rate = rows / seconds
            print(f"round {n + 1}: {rows} rows in {seconds:.2f} s = {rate:,.0f} rows/s at {cfg.isolation_level}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
