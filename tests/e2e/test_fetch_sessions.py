"""KIP-227 fetch sessions with the Java consumer (Kafka's console consumer): it opens a session
and reads every record of 20 partitions once, in order, through incremental fetches, while
librdkafka (sessionless) reads the same; the broker's fetch_sessions logger, set to DEBUG at run
time through kafka-configs, shows the session."""

from __future__ import annotations

from collections import defaultdict

from confluent_kafka import Producer

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import tool
from tests.e2e.txn_clients import confluent_read

PARTITIONS, PER_PARTITION = 20, 30


def test_the_java_consumer_reads_every_record_once_through_a_session(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker: BrokerProcess = broker_factory()
    tool(broker, "kafka-topics", "--create", "--topic", "fs", "--partitions", str(PARTITIONS))
    tool(broker, "kafka-configs", "--alter", "--entity-type", "broker-loggers", "--entity-name", "1",
         "--add-config", "broker.fetch_sessions=DEBUG")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce("fs", value=b"%d-%d" % (p, i), partition=p)
        producer.poll(0)
    assert producer.flush(30) == 0
    out = tool(broker, "kafka-console-consumer", "--topic", "fs", "--from-beginning",
               "--max-messages", str(PARTITIONS * PER_PARTITION), "--formatter-property", "print.partition=true",
               "--timeout-ms", "60000")
    seen: dict[int, list[str]] = defaultdict(list)
    for line in out.splitlines():
        partition, value = line.split("\t")
        seen[int(partition.removeprefix("Partition:"))].append(value)
    assert seen == {p: [f"{p}-{i}" for i in range(PER_PARTITION)] for p in range(PARTITIONS)}
    assert broker.logged(f"opened with {PARTITIONS} partitions")  # the DEBUG line of a new session
    assert len(confluent_read(broker.bootstrap, {"fs": PARTITIONS}, "read_uncommitted", PARTITIONS * PER_PARTITION)) \
        == PARTITIONS * PER_PARTITION
