"""Kafka's own CLI tools (kafka-tools 4.3.1) against the broker, asserting on what they print, which
is what they print against Apache Kafka 4.x (checked side by side with bench/servers.py's Kafka).
Commands are grouped per test so that JVM starts stay few."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e


def tool(broker: BrokerProcess, name: str, *args: str, input: str | None = None) -> str:
    """The tool's stdout; it must exit 0."""
    out = run_tool(name, "--bootstrap-server", broker.bootstrap, *args, input=input)
    assert out.returncode == 0, f"{name} {args}: {out.stdout}{out.stderr}"
    return out.stdout


def failing(broker: BrokerProcess, name: str, *args: str) -> str:
    """stdout and stderr of a tool run that must fail."""
    out = run_tool(name, "--bootstrap-server", broker.bootstrap, *args)
    assert out.returncode != 0, out.stdout + out.stderr
    return out.stdout + out.stderr


def commit_offsets(broker: BrokerProcess, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def produce(broker: BrokerProcess, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(count):
        producer.produce(topic, key=f"k{i}", value=f"v{i}")
    assert producer.flush(30) == 0


def test_issue_11_features_groups_and_single_node_limits(broker: BrokerProcess) -> None:
    """kafka-features describe printed nothing, kafka-groups --list no TYPE, and leader election /
    reassignment failed with "The node does not support ELECT_LEADERS / LIST_PARTITION_REASSIGNMENTS"."""
    tool(broker, "kafka-topics", "--create", "--topic", "tools-a", "--partitions", "2")
    produce(broker, "tools-a", 3)
    commit_offsets(broker, "tools-group", "tools-a", 2)

    features = tool(broker, "kafka-features", "describe")
    assert features.split() == ["Feature:", "metadata.version", "SupportedMinVersion:", "3.3-IV3",
                                "SupportedMaxVersion:", "4.0-IV3", "FinalizedVersionLevel:", "4.0-IV3",
                                "Epoch:", "0"], features

    groups = tool(broker, "kafka-groups", "--list").splitlines()
    assert groups[0].split() == ["GROUP", "TYPE", "PROTOCOL"]
    assert ["tools-group", "Classic"] in [line.split()[:2] for line in groups[1:]], groups

    # Kafka filters ELECTION_NOT_NEEDED out of --all-topic-partitions and names it for one partition.
    assert tool(broker, "kafka-leader-election", "--election-type", "preferred", "--all-topic-partitions") == ""
    named = tool(broker, "kafka-leader-election", "--election-type", "unclean", "--topic", "tools-a",
                 "--partition", "1")
    assert named.strip() == "Valid replica already elected for partitions tools-a-1"
    assert tool(broker, "kafka-reassign-partitions", "--list").strip() == "No partition reassignments found."
