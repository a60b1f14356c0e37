"""Share groups (KIP-932) with Kafka 4.4's KafkaShareConsumer (tests/e2e/java/ShareCheck.java):
several members sharing partitions, explicit acknowledgement (RELEASE comes back with delivery
count 2; ACCEPT and REJECT do not), a lock that runs out handing the records to another member
(the late acknowledgement of the first then fails), archiving at share.delivery.count.limit, and
read_committed over committed and aborted transactions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_java_admin import kafka_dist_classpath
from tests.e2e.test_java_clients import compile_java
from tests.e2e.txn_clients import create_topics, plain_producer

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "ShareCheck.java"
# group.share.min.record.lock.duration.ms lets a group lock records for 1 s (Kafka's floor is 1000)
SETTINGS = {"group.share.min.record.lock.duration.ms": "1000", "offsets.topic.num.partitions": "2",
            "share.coordinator.state.topic.num.partitions": "2", "transaction.state.log.num.partitions": "2"}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java-share"), SOURCE, kafka_dist_classpath(), "-nowarn")


def run_check(compiled: str, bootstrap: str, scenario: str, records: int, group: str = "sg") -> dict[str, str]:
    proc = subprocess.run(["java", "-cp", compiled, "ShareCheck", bootstrap, scenario, "st", group, str(records)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line.split()[1]: " ".join(line.split()[2:]) for line in proc.stdout.splitlines()
            if line.startswith("CHECK ")}


def produce(bootstrap: str, records: int, partitions: int) -> None:
    create_topics(bootstrap, ["st"], partitions)
    producer = plain_producer(bootstrap)
    for i in range(records):
        producer.produce("st", value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0


@pytest.mark.parametrize(("scenario", "partitions", "expected"), [
    # The members join before any is assigned a partition (the share-partitions are initialized
    # first, as Kafka 4.4 does), so no member holds every partition when the records come.
    ("members", 3, {"described": "Stable 3", "consumed": "60", "duplicates": "0", "members_with_records": "3"}),
    ("explicit", 2, {"first": "60 [1]", "second": "60 [2]", "after": "0"}),
    # Each record's deliveries at both members count 1, 2, ...: the other member gets it at 2, or
    # at 3 when the holder's client fetched it again first (its own ShareFetch, waiting at the
    # broker, may win the records as their lock runs out: ShareCheck.java says why).
    ("lock_timeout", 1, {"held": "60 [1]", "redelivered": "60", "late_ack_failed": "true",
                         "each_delivery_counted_once": "true"}),
    ("delivery_limit", 2, {"first": "60", "second": "60", "third": "0"}),
])
def test_java_share_consumers(compiled: str, broker_factory, scenario: str, partitions: int,  # type: ignore[no-untyped-def]
                              expected: dict[str, str]) -> None:
    broker = broker_factory(SETTINGS)
    produce(broker.bootstrap, 0 if scenario == "members" else 60, partitions)  # members: produced by the check
    checks = run_check(compiled, broker.bootstrap, scenario, 60)
    checks.pop("holder_fetched_again", None)  # how many the holder's client fetched again: it varies
    assert checks == expected


def test_java_share_consumer_read_committed(compiled: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["st"], 1)
    assert run_check(compiled, broker.bootstrap, "read_committed", 20) == {
        "committed": "40", "aborted_seen": "false", "uncommitted": "60"}
