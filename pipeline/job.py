"""The Structured Streaming job.

Two queries read the same topics with Spark's Kafka source (`format("kafka")`) at the configured
isolation level (read_committed by default):

* `transfers`: the parsed events, appended to parquet under `<out>/transfers` by Spark's file sink.
  Its checkpoint and the sink's own metadata log make the files exactly-once across restarts.
* `balances`: a running sum per account (a stateful aggregation, update mode), written back to the
  broker through Spark's Kafka sink as key=account, value={"account": .., "balance": ..}. The sink is
  at-least-once, but each record carries the full balance, so the latest record per key is the
  answer even if a batch is written twice.

Each query has its own checkpoint under `<out>/checkpoints/`, so a restarted job resumes where it
stopped.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

TRANSFER_SCHEMA = "txn STRING, `from` STRING, `to` STRING, amount LONG"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_JARS_DIR = REPO / "spark-jars"


@dataclass(frozen=True, slots=True, kw_only=True)
class JobConfig:
    bootstrap: str
    topics: Sequence[str]
    out_dir: Path
    output_topic: str | None = "balances"
    isolation_level: str = "read_committed"
    starting_offsets: str = "earliest"
    # None: run once over what is there (availableNow); otherwise a micro-batch interval.
    interval_seconds: float | None = None
    max_offsets_per_trigger: int | None = None
    query_prefix: str = "pipeline"

    @property
    def transfers_path(self) -> Path:
        return self.out_dir / "transfers"

    def checkpoint(self, name: str) -> str:
        return str(self.out_dir / "checkpoints" / name)


def connector_jars(jars_dir: Path = DEFAULT_JARS_DIR) -> list[str]:
    jars = sorted(glob.glob(str(Path(jars_dir) / "*.jar")))
    if not any("spark-sql-kafka" in Path(j).name for j in jars):
        raise FileNotFoundError(f"no Spark Kafka connector jars in {jars_dir}; run `make spark-jars`")
    return jars


def spark_session(
    jars_dir: Path = DEFAULT_JARS_DIR, *, app_name: str = "eosbroker-pipeline", master: str = "local[2]"
) -> SparkSession:
    """A local SparkSession with the connector on its classpath (`spark.jars`), bound to loopback."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars", ",".join(connector_jars(jars_dir)))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel(os.environ.get("PIPELINE_SPARK_LOG_LEVEL", "WARN"))
    return spark


def kafka_source_options(cfg: JobConfig) -> dict[str, str]:
    options = {
        "kafka.bootstrap.servers": cfg.bootstrap,
        "subscribe": ",".join(cfg.topics),
        "kafka.isolation.level": cfg.isolation_level,
        "startingOffsets": cfg.starting_offsets,
        # Offsets held by control markers and aborted records are gaps a read_committed reader
        # must cross; keep the default so a real loss of data still fails the query.
        "failOnDataLoss": "true",
    }
    if cfg.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(cfg.max_offsets_per_trigger)
    return options


def parse_transfers(raw: DataFrame) -> DataFrame:
    """Kafka rows -> one row per event, keeping where it came from."""
    from pyspark.sql import functions as F

    event = F.from_json(F.col("value").cast("string"), TRANSFER_SCHEMA)
    return raw.select(
        event["txn"].alias("txn"),
        event["from"].alias("from_account"),
        event["to"].alias("to_account"),
        event["amount"].alias("amount"),
        "topic",
        "partition",
        "offset",
    )


def account_balances(transfers: DataFrame) -> DataFrame:
    """Running balance per account: each event debits `from` and credits `to`."""
    from pyspark.sql import functions as F

    legs = transfers.select(
        F.explode(
            F.array(
                F.struct(F.col("from_account").alias("account"), (-F.col("amount")).alias("delta")),
                F.struct(F.col("to_account").alias("account"), F.col("amount").alias("delta")),
            )
        ).alias("leg")
    ).select("leg.account", "leg.delta")
    return legs.groupBy("account").agg(F.sum("delta").alias("balance"))


def _trigger(cfg: JobConfig) -> dict[str, Any]:
    if cfg.interval_seconds is None:
        return {"availableNow": True}
    return {"processingTime": f"{cfg.interval_seconds} seconds"}


def start(spark: SparkSession, cfg: JobConfig) -> list[StreamingQuery]:
    """Start the job's queries; the caller waits on them (or stops them)."""
    raw = spark.readStream.format("kafka").options(**kafka_source_options(cfg)).load()
    transfers = parse_transfers(raw)
    queries = [
        transfers.writeStream.format("parquet")
        .option("path", str(cfg.transfers_path))
        .option("checkpointLocation", cfg.checkpoint("transfers"))
        .queryName(f"{cfg.query_prefix}_transfers")
        .trigger(**_trigger(cfg))
        .start()
    ]
    if cfg.output_topic:
        from pyspark.sql import functions as F

        out = account_balances(transfers).select(
            F.col("account").alias("key"),
            F.to_json(F.struct("account", "balance")).alias("value"),
        )
        queries.append(
            out.writeStream.format("kafka")
            .outputMode("update")
            .option("kafka.bootstrap.servers", cfg.bootstrap)
            .option("topic", cfg.output_topic)
            .option("checkpointLocation", cfg.checkpoint("balances"))
            .queryName(f"{cfg.query_prefix}_balances")
            .trigger(**_trigger(cfg))
            .start()
        )
    return queries


def read_transfer_files(spark: SparkSession, cfg: JobConfig) -> list[dict[str, Any]]:
    """Everything the file sink has committed (the sink's metadata log hides partial files)."""
    path = cfg.transfers_path
    if not path.exists():
        return []
    return [r.asDict() for r in spark.read.parquet(str(path)).collect()]


def read_balances_topic(spark: SparkSession, bootstrap: str, topic: str) -> dict[str, int]:
    """The latest balance per account in the job's output topic (a batch read through the connector)."""
    import json

    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .selectExpr("CAST(key AS STRING) AS account", "CAST(value AS STRING) AS value", "partition", "offset")
        .collect()
    )
    latest: dict[str, tuple[int, int, int]] = {}
    for r in rows:
        seen = latest.get(r.account)
        if seen is None or (r.partition, r.offset) > seen[:2]:
            latest[r.account] = (r.partition, r.offset, json.loads(r.value)["balance"])
    return {account: v[2] for account, v in latest.items()}
