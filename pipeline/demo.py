"""make demo: the whole pipeline on one machine, checked against the producer's own record.

1. start eosbroker (or use --bootstrap), create the `transfers` and `balances` topics;
2. start the streaming job (pipeline.job) at read_committed;
3. a confluent-kafka transactional producer writes transfer events, committing most transactions
   and aborting some, while a progress line shows both sides;
4. wait until the last transaction is stable and the job has processed everything;
5. print each account's balance from the committed transactions beside the job's two results
   (parquet files and the balances topic); exit 1 if anything differs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .job import DEFAULT_JARS_DIR, JobConfig, read_balances_topic, read_transfer_files, spark_session, start
from .local_broker import LocalBroker
from .producer import ProduceStats, create_topics, produce_plan
from .transfers import PlannedTxn, Transfer, balances, committed_transfers, multiset, plan_transactions
from .watermarks import wait_until_stable

SIZES = {  # transactions, events per transaction, accounts
    "small": (30, 4, 8),
    "default": (2000, 5, 40),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pipeline.demo", description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="a few dozen transactions (the test suite's size)")
    p.add_argument("--transactions", type=int)
    p.add_argument("--abort-ratio", type=float, default=0.2)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--bootstrap", help="use this broker instead of starting one")
    p.add_argument("--topic-prefix", default="", help="prefix for the demo's two topics")
    p.add_argument("--work-dir", type=Path, help="broker data, parquet and checkpoints (default: a temp dir)")
    p.add_argument("--jars-dir", type=Path, default=DEFAULT_JARS_DIR)
    p.add_argument("--interval", type=float, default=1.0, help="micro-batch interval in seconds")
    return p.parse_args(argv)


class Progress:
    """A progress line while the producer runs: what was written and what Spark has read."""

    def __init__(self, query: Any, total: int) -> None:
        self.query = query
        self.total = total
        self.stats = ProduceStats()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._tty = sys.stdout.isatty()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def update(self, stats: ProduceStats) -> None:
        self.stats = stats

    def line(self) -> str:
        s = self.stats
        read = sum(p["numInputRows"] for p in self.query.recentProgress)
        start = "\r" if self._tty else ""
        return (
            f"{start}produced {s.committed + s.aborted}/{self.total} transactions "
            f"({s.committed} committed, {s.aborted} aborted) | spark read {read} events"
        )

    def _run(self) -> None:
        last = ""
        while not self._done.wait(0.5):  # display refresh only; nothing waits on it
            line = self.line()
            if line != last:
                print(line, end="" if self._tty else "\n", flush=True)
                last = line

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        print(self.line().lstrip("\r") if not self._tty else self.line(), flush=True)


def read_rate(query: Any) -> tuple[int, float]:
    """Events read and events per second over the micro-batches that had input."""
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in batches)
    seconds = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
    return rows, (rows / seconds if seconds else 0.0)


def compare(expected: dict[str, int], from_files: dict[str, int], from_topic: dict[str, int]) -> bool:
    accounts = sorted(set(expected) | set(from_files) | set(from_topic))
    print(f"\n{'account':<10} {'committed':>12} {'parquet':>12} {'topic':>12}")
    ok = True
    for a in accounts:
        row = [expected.get(a), from_files.get(a), from_topic.get(a)]
        same = row[0] == row[1] == row[2]
        ok &= same
        cells = " ".join(f"{'-' if v is None else v:>12}" for v in row)
        print(f"{a:<10} {cells}{'' if same else '   <-- differs'}")
    return ok


def start_broker(stack: ExitStack, work: Path) -> str:
    broker = stack.enter_context(LocalBroker(work / "broker-data", work / "broker.log"))
    print(f"broker on {broker.bootstrap} (log: {work / 'broker.log'})")
    return broker.bootstrap


def produce_and_process(spark: Any, cfg: JobConfig, plan: list[PlannedTxn], txn_id: str) -> None:
    """Run the job while the producer writes; return once the job has processed everything."""
    queries = start(spark, cfg)
    started = time.monotonic()
    try:
        with Progress(queries[0], len(plan)) as progress:
            produce_plan(cfg.bootstrap, cfg.topics[0], plan, transactional_id=txn_id, on_progress=progress.update)
            wait_until_stable(cfg.bootstrap, cfg.topics[0])
            for q in queries:
                q.processAllAvailable()
        rows, rate = read_rate(queries[0])
    finally:
        for q in queries:
            q.stop()
    print(
        f"spark read {rows} events at {cfg.isolation_level}, {rate:,.0f} events/s in micro-batches; "
        f"{time.monotonic() - started:.1f} s from first produce to all processed"
    )


def check(spark: Any, cfg: JobConfig, plan: list[PlannedTxn]) -> bool:
    """The job's two outputs against the committed transactions."""
    assert cfg.output_topic is not None
    expected = committed_transfers(plan)
    from_files = [Transfer.from_row(r) for r in read_transfer_files(spark, cfg)]
    ok = compare(balances(expected), balances(from_files), read_balances_topic(spark, cfg.bootstrap, cfg.output_topic))
    if multiset(from_files) != multiset(expected):
        print(f"events differ: parquet has {len(from_files)}, committed transactions {len(expected)}")
        ok = False
    return ok


def run(args: argparse.Namespace, work: Path) -> int:
    count, events, accounts = SIZES["small" if args.small else "default"]
    plan = plan_transactions(
        count=args.transactions or count,
        events_per_txn=events,
        accounts=accounts,
        abort_ratio=args.abort_ratio,
        seed=args.seed,
    )
    source, sink = f"{args.topic_prefix}transfers", f"{args.topic_prefix}balances"
    with ExitStack() as stack:
        bootstrap = args.bootstrap or start_broker(stack, work)
        create_topics(bootstrap, {source: args.partitions, sink: args.partitions})
        spark = spark_session(args.jars_dir, app_name="eosbroker-demo")
        stack.callback(spark.stop)
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        cfg = JobConfig(
            bootstrap=bootstrap,
            topics=[source],
            out_dir=work / "out",
            output_topic=sink,
            interval_seconds=args.interval,
        )
        produce_and_process(spark, cfg, plan, txn_id=f"{args.topic_prefix}demo-{args.seed}")
        ok = check(spark, cfg, plan)
    print("OK: the job's balances equal the committed transactions'" if ok else "MISMATCH")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.work_dir:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        return run(args, args.work_dir.resolve())
    with tempfile.TemporaryDirectory(prefix="eosbroker-demo-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
