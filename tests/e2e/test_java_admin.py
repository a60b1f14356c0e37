"""The stock Java Admin client, kafka-clients 3.9 (Spark's) and 4.4 (Apache Kafka's current),
against the broker: describeTopics (4.x asks for DescribeTopicPartitions, which is not
advertised, and must fall back to Metadata), listOffsets by spec at both isolation levels,
describeTransactions / listTransactions / describeProducers on an open transaction, a
read_committed consumer group with subscribe, describeConsumerGroups / listConsumerGroupOffsets,
incrementalAlterConfigs / describeConfigs (with documentation), deleteRecords,
describeLogDirs and describeCluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.broker_process import REPO, BrokerProcess
from tests.e2e.test_java_clients import classpath as spark_classpath
from tests.e2e.test_java_clients import compile_java

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "AdminCheck.java"
KAFKA_DIST = REPO / "bench" / "kafka-dist"
RUNTIME_JARS = ("slf4j-api", "zstd-jni", "lz4-java", "snappy-java")
SETTINGS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


def kafka_dist_classpath() -> list[Path]:
    jars = sorted(KAFKA_DIST.glob("kafka-clients-*.jar"))
    if not jars:
        pytest.fail("bench/kafka-dist/kafka-clients-*.jar is missing: run `make kafka-dist`")
    return jars + [j for j in KAFKA_DIST.glob("*.jar") if j.name.startswith(RUNTIME_JARS)]


@pytest.fixture(scope="module", params=["spark", "kafka-dist"])
def compiled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    jars = spark_classpath() if request.param == "spark" else kafka_dist_classpath()
    return compile_java(tmp_path_factory.mktemp(f"java-admin-{request.param}"), SOURCE, jars, "-nowarn")


# topic "ja": 10 plain records on partition 0 (timestamps 1000-1009), then 3 in a transaction
# (2000-2002, offsets 10-12) that stays open while offsets and transactions are looked at.
EXPECTED = {
    "partitions": "2", "leader": "1", "topic_id_set": "true",
    **{f"before_txn_{k}_{level}": v for level in ("ru", "rc") for k, v in
       {"earliest": "0", "latest": "10", "max_ts": "9", "for_ts_1004": "4", "for_ts_2001": "-1"}.items()},
    "open_txn_earliest_ru": "0", "open_txn_latest_ru": "13", "open_txn_max_ts_ru": "12",
    "open_txn_for_ts_1004_ru": "4", "open_txn_for_ts_2001_ru": "11",
    "open_txn_earliest_rc": "0", "open_txn_latest_rc": "10", "open_txn_max_ts_rc": "-1",
    "open_txn_for_ts_1004_rc": "4", "open_txn_for_ts_2001_rc": "-1",
    "listed_state": "Ongoing", "txn_listed": "true", "txn_state": "Ongoing", "txn_partitions": "[ja-0]",
    "txn_coordinator": "1", "producers": "2", "producers_in_txn": "1", "txn_start_offset": "10",
    # read_committed: 10 plain + 3 committed; the committed position is past the commit marker.
    "group_consumed": "13", "group_members": "1", "group_client": "ja-group-client", "group_assigned": "2",
    "group_coordinator": "1", "group_committed_p0": "14", "group_listed": "true",
    "retention_ms": "3600000", "retention_ms_source": "DYNAMIC_TOPIC_CONFIG", "cleanup_policy": "delete",
    "retention_ms_doc": "Topic config, long; without a value of its own, the broker's log",
    "retention_ms_doc_unasked": "null", "num_partitions_doc": "Int, default 1; at least 1",
    "low_watermark": "5", "earliest_after_delete": "5", "log_dirs": "1", "p0_size_positive": "true",
    "nodes": "1", "controller": "1",
}


def test_java_admin_calls(compiled: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker: BrokerProcess = broker_factory(SETTINGS)
    proc = subprocess.run(["java", "-cp", compiled, "AdminCheck", broker.bootstrap, "ja"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split(" ", 2)[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    assert checks == EXPECTED
