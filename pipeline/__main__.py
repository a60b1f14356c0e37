"""python -m pipeline: run the streaming job against a running broker.

python -m pipeline --bootstrap 127.0.0.1:9092 --topics transfers --out pipeline/out
python -m pipeline ... --available-now      # process what is there, then exit
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .job import DEFAULT_JARS_DIR, JobConfig, spark_session, start


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="bootstrap servers: host:port[,host:port...]")
    p.add_argument("--topics", default="transfers", help="comma-separated topics to read")
    p.add_argument("--out", type=Path, default=Path("pipeline/out"), help="parquet and checkpoints")
    p.add_argument("--output-topic", default="balances", help="topic for balances ('' to skip)")
    p.add_argument("--isolation-level", default="read_committed", choices=["read_committed", "read_uncommitted"])
    p.add_argument("--starting-offsets", default="earliest", help="earliest, latest or Spark's JSON")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--available-now", action="store_true", help="process what is there and exit")
    mode.add_argument("--interval", type=float, default=2.0, help="micro-batch interval in seconds")
    p.add_argument("--max-offsets-per-trigger", type=int)
    p.add_argument(
        "--create-topics",
        type=int,
        metavar="PARTITIONS",
        help="create the input and output topics first if they are missing",
    )
    p.add_argument("--jars-dir", type=Path, default=DEFAULT_JARS_DIR)
    p.add_argument("--master", default="local[2]")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = JobConfig(
        bootstrap=args.bootstrap,
        topics=[t for t in args.topics.split(",") if t],
        out_dir=args.out.resolve(),
        output_topic=args.output_topic or None,
        isolation_level=args.isolation_level,
        starting_offsets=args.starting_offsets,
        interval_seconds=None if args.available_now else args.interval,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
    )
    if args.create_topics:
        from .producer import create_topics

        wanted = [*cfg.topics, *([cfg.output_topic] if cfg.output_topic else [])]
        create_topics(cfg.bootstrap, dict.fromkeys(wanted, args.create_topics))
    spark = spark_session(args.jars_dir, master=args.master)
    queries = start(spark, cfg)
    print(
        f"pipeline: reading {','.join(cfg.topics)} from {cfg.bootstrap} at {cfg.isolation_level}; "
        f"parquet in {cfg.transfers_path}",
        flush=True,
    )
    try:
        for q in queries:
            q.awaitTermination()
    except KeyboardInterrupt:
        for q in queries:
            q.stop()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
