"""Apache Kafka's 4.4 Java client (bench/kafka-dist, `make kafka-dist`) negotiates the versions
Kafka 4.4 added and kio lacks (protocol/newer_schemas.py): ApiVersions v5 on every connection,
TxnOffsetCommit v6 from sendOffsetsToTransaction and DeleteGroups v3 from deleteConsumerGroups;
the broker's request metrics show which versions came."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_java_admin import kafka_dist_classpath
from tests.e2e.test_java_clients import compile_java
from tests.e2e.test_transactions_v2 import requests_by_version, samples_of
from tests.e2e.txn_clients import confluent_read, create_topics, plain_producer

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "NewerVersionsCheck.java"
SETTINGS = {"metrics.port": "0", "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "2",
            "transaction.state.log.num.partitions": "2"}
RECORDS = 300


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java-newer"), SOURCE, kafka_dist_classpath(), "-nowarn")


def test_kafka_44_client_commits_offsets_by_topic_id_and_deletes_its_group(  # type: ignore[no-untyped-def]
        compiled: str, broker_factory) -> None:
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["nv-in", "nv-out"], 2)
    producer = plain_producer(broker.bootstrap)
    for i in range(RECORDS):
        producer.produce("nv-in", value=b"v%d" % i, key=b"k%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    proc = subprocess.run(["java", "-cp", compiled, "NewerVersionsCheck", broker.bootstrap, "nv-in", "nv-out",
                           "nv-group", str(RECORDS)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    assert checks == {"copied": str(RECORDS), "committed": str(RECORDS), "nodes": "1", "deleted": "ok",
                      "deleted_again": "GroupIdNotFoundException"}
    assert len(confluent_read(broker.bootstrap, {"nv-out": 2}, "read_committed", RECORDS)) == RECORDS
    samples = samples_of(broker)
    assert 5 in requests_by_version(samples, "ApiVersions")  # librdkafka's connections ask v3
    assert set(requests_by_version(samples, "TxnOffsetCommit")) == {6}
    assert set(requests_by_version(samples, "DeleteGroups")) == {3}
