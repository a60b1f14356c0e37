"""Kafka's own CLI tools (kafka-tools 4.4.0) against the broker, asserting on what they print, which
is what they print against Apache Kafka 4.x (checked side by side with bench/servers.py's Kafka).
Commands are grouped per test so that JVM starts stay few."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.e2e.test_metrics import Scraper
from tests.e2e.test_startup import refused
from tests.e2e.txn_clients import txn_producer
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e


# Tools whose --bootstrap-server belongs to the subcommand, after it.
SUBCOMMAND_OPTIONS = frozenset({"kafka-cluster"})


def tool(broker: BrokerProcess, name: str, *args: str, input: str | None = None) -> str:
    """The tool's stdout; it must exit 0."""
    bootstrap = ("--bootstrap-server", broker.bootstrap)
    argv = (*args, *bootstrap) if name in SUBCOMMAND_OPTIONS else (*bootstrap, *args)
    out = run_tool(name, *argv, input=input)
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

    features = {line.split()[1]: line.split() for line in tool(broker, "kafka-features", "describe").splitlines()}
    assert features["metadata.version"] == ["Feature:", "metadata.version", "SupportedMinVersion:", "3.3-IV3",
                                            "SupportedMaxVersion:", "4.0-IV3", "FinalizedVersionLevel:", "4.0-IV3",
                                            "Epoch:", "0"], features
    assert features["group.version"] == ["Feature:", "group.version", "SupportedMinVersion:", "0",
                                         "SupportedMaxVersion:", "1", "FinalizedVersionLevel:", "1",
                                         "Epoch:", "0"], features
    assert features["transaction.version"] == ["Feature:", "transaction.version", "SupportedMinVersion:", "0",
                                               "SupportedMaxVersion:", "2", "FinalizedVersionLevel:", "2",
                                               "Epoch:", "0"], features

    refused_upgrade = failing(broker, "kafka-features", "upgrade", "--feature", "metadata.version=26")
    assert ("Could not upgrade metadata.version to 26. The update failed for all features since the following "
            "feature had an error: Invalid update version 26 for feature metadata.version.") in refused_upgrade

    groups = tool(broker, "kafka-groups", "--list").splitlines()
    assert groups[0].split() == ["GROUP", "TYPE", "PROTOCOL"]
    assert ["tools-group", "Classic"] in [line.split()[:2] for line in groups[1:]], groups

    # Kafka filters ELECTION_NOT_NEEDED out of --all-topic-partitions and names it for one partition.
    assert tool(broker, "kafka-leader-election", "--election-type", "preferred", "--all-topic-partitions") == ""
    named = tool(broker, "kafka-leader-election", "--election-type", "unclean", "--topic", "tools-a",
                 "--partition", "1")
    assert named.strip() == "Valid replica already elected for partitions tools-a-1"
    assert tool(broker, "kafka-reassign-partitions", "--list").strip() == "No partition reassignments found."


def config_lines(out: str) -> dict[str, str]:
    """kafka-configs --describe output: name -> the rest of its line."""
    return dict(line.strip().split("=", 1) for line in out.splitlines() if line.startswith("  "))


def test_issue_11_broker_topic_and_logger_configs(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """`--describe --all` of a broker showed listeners=null and no synonyms; broker-logger configs
    were refused with "resource type 8"."""
    broker = broker_factory({"log.retention.ms": "100000"})
    tool(broker, "kafka-topics", "--create", "--topic", "tools-c", "--config", "retention.bytes=999")
    brokers = config_lines(tool(broker, "kafka-configs", "--describe", "--all", "--entity-type", "brokers",
                                "--entity-name", "1"))
    port = broker.bootstrap.rsplit(":", 1)[1]
    assert brokers["listeners"] == (f"PLAINTEXT://127.0.0.1:{port} sensitive=false synonyms={{STATIC_BROKER_CONFIG:"
                                    f"listeners=PLAINTEXT://127.0.0.1:{port}, DEFAULT_CONFIG:listeners=PLAINTEXT://:9092}}")
    assert brokers["log.retention.ms"] == ("100000 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.ms="
                                           "100000, DEFAULT_CONFIG:log.retention.hours=168}")
    assert brokers["num.partitions"] == "1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}"
    assert brokers["log.retention.minutes"] == "null sensitive=false synonyms={}"
    topic = config_lines(tool(broker, "kafka-configs", "--describe", "--all", "--entity-type", "topics",
                              "--entity-name", "tools-c"))
    assert topic["retention.bytes"] == ("999 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=999, "
                                        "DEFAULT_CONFIG:log.retention.bytes=-1}")
    assert topic["cleanup.policy"] == "delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}"
    described = tool(broker, "kafka-topics", "--describe", "--topic", "tools-c")
    assert "Configs: retention.ms=100000,retention.bytes=999" in described, described

    def loggers() -> dict[str, str]:
        out = tool(broker, "kafka-configs", "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
        return {k: v.split()[0] for k, v in config_lines(out).items()}

    before = loggers()
    assert before["root"] == "INFO" and before["coordinator.transaction"] == "INFO", before
    logger_args = ("--alter", "--entity-type", "broker-loggers", "--entity-name", "1")
    assert "Completed updating config for broker-logger 1." in tool(
        broker, "kafka-configs", *logger_args, "--add-config", "coordinator.transaction=DEBUG")
    after = loggers()
    assert after["coordinator.transaction"] == after["coordinator.transaction.coordinator"] == "DEBUG"
    assert after["coordinator.group"] == "INFO"
    refusal = failing(broker, "kafka-configs", *logger_args, "--add-config", "coordinator=LOUD")
    assert ("InvalidConfigurationException: Cannot set the log level of coordinator to LOUD as it is not a "
            "supported log level. Valid log levels are TRACE, DEBUG, INFO, WARN, ERROR, FATAL") in refusal
    tool(broker, "kafka-configs", *logger_args, "--delete-config", "coordinator.transaction")
    assert loggers() == before


def test_issue_11_cluster_id_is_generated_per_data_dir_and_kept(broker_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The cluster id was the fixed string eosbroker-cluster-0001."""
    first, second = broker_factory(name="one"), broker_factory(name="two")
    ids = []
    for broker in (first, second):
        out = tool(broker, "kafka-cluster", "cluster-id").strip()
        assert out.startswith("Cluster ID: ") and len(out.removeprefix("Cluster ID: ")) == 22, out
        ids.append(out.removeprefix("Cluster ID: "))
    assert ids[0] != ids[1]
    meta = (tmp_path / "one" / "meta.properties").read_text()
    assert f"cluster.id={ids[0]}\n" in meta and "node.id=1\n" in meta and "version=1\n" in meta
    first.restart(kill=False)
    assert tool(first, "kafka-cluster", "cluster-id").strip() == f"Cluster ID: {ids[0]}"
    first.stop()
    line = refused(tmp_path / "one", "--port", "0", "--data-dir", str(tmp_path / "one"), "--set", "node.id=2")
    assert "Stored node id 1 doesn't match previous node id 2 in " in line, line


def test_operator_workflow_prints_what_kafka_prints(broker: BrokerProcess, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The everyday commands, each output as Apache Kafka 4.4 printed it side by side (issue 11's
    sweep; before it, `kafka-configs --describe --entity-type users` failed with "The node does not
    support DESCRIBE_CLIENT_QUOTAS" and kafka-acls said "No Authorizer is configured.")."""
    tool(broker, "kafka-topics", "--create", "--topic", "ops", "--partitions", "2")
    tool(broker, "kafka-console-producer", "--topic", "ops", "--reader-property", "parse.key=true",
         "--reader-property", "key.separator=:", input="a:1\nb:2\nc:3\nd:4\n")
    consumed = tool(broker, "kafka-console-consumer", "--topic", "ops", "--from-beginning", "--max-messages", "4",
                    "--formatter-property", "print.key=true", "--group", "ops-group",
                    "--isolation-level", "read_committed", "--timeout-ms", "30000")
    assert sorted(line for line in consumed.splitlines() if "\t" in line) == ["a\t1", "b\t2", "c\t3", "d\t4"], consumed
    assert tool(broker, "kafka-consumer-groups", "--list").split() == ["ops-group"]
    rows = [line.split() for line in tool(broker, "kafka-consumer-groups", "--describe", "--group",
                                          "ops-group").splitlines() if line.startswith("ops-group")]
    ends = {int(r[2]): int(r[4]) for r in rows}
    assert sum(ends.values()) == 4 and all(r[3] == r[4] and r[5] == "0" and r[6] == "-" for r in rows), rows
    reset = tool(broker, "kafka-consumer-groups", "--reset-offsets", "--group", "ops-group", "--topic", "ops:0",
                 "--to-offset", "1", "--execute")
    assert reset.split()[-4:] == ["ops-group", "ops", "0", "1"], reset
    deleted = tool(broker, "kafka-consumer-groups", "--delete-offsets", "--group", "ops-group", "--topic", "ops")
    assert "Request succeeded for deleting offsets from group ops-group." in deleted
    assert tool(broker, "kafka-consumer-groups", "--delete", "--group", "ops-group").strip() == \
        "Deletion of requested consumer groups ('ops-group') was successful."
    assert sorted(tool(broker, "kafka-get-offsets", "--topic", "ops", "--time", "-1").split()) == [
        f"ops:{p}:{ends[p]}" for p in sorted(ends)]
    full = max(ends, key=lambda p: ends[p])
    offsets = tmp_path / "delete.json"
    offsets.write_text(f'{{"partitions":[{{"topic":"ops","partition":{full},"offset":1}}],"version":1}}')
    assert f"partition: ops-{full}\tlow_watermark: 1" in tool(broker, "kafka-delete-records", "--offset-json-file",
                                                               str(offsets))
    assert '"logDir":' in tool(broker, "kafka-log-dirs", "--describe", "--topic-list", "ops")
    assert "SecurityDisabledException: No Authorizer is configured on the broker" in failing(broker, "kafka-acls",
                                                                                              "--list")
    assert tool(broker, "kafka-configs", "--describe", "--entity-type", "users").strip() == ""
    perf = run_tool("kafka-producer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", "ops",
                    "--num-records", "200", "--record-size", "100", "--throughput", "-1", check=True).stdout
    assert "200 records sent" in perf, perf
    consumer_perf = tool(broker, "kafka-consumer-perf-test", "--topic", "ops", "--num-records", "100",
                         "--timeout", "30000").splitlines()
    assert consumer_perf[-2].startswith("start.time, end.time, data.consumed.in.MB"), consumer_perf
    producers = tool(broker, "kafka-transactions", "describe-producers", "--topic", "ops", "--partition", "0")
    assert producers.split()[:6] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                                     "LastTimestamp", "CurrentTransactionStartOffset"]
    assert tool(broker, "kafka-transactions", "list").split() == ["TransactionalId", "Coordinator", "ProducerId",
                                                                 "TransactionState"]


def test_kafka_4_options_that_need_the_newest_versions(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """kafka-transactions list --transactional-id-pattern needs ListTransactions v2 (KIP-1152),
    kafka-cluster list-endpoints --include-fenced-brokers DescribeCluster v2 (KIP-1073) and
    kafka-get-offsets --time -6 ListOffsets v11 (KIP-1023): each failed with "The node does not
    support" the version before; the request metrics show the versions they used."""
    broker = broker_factory({"metrics.port": "0", "transaction.state.log.num.partitions": "1"})
    tool(broker, "kafka-topics", "--create", "--topic", "newest", "--partitions", "2")
    produce(broker, "newest", 3)
    producers = [txn_producer(broker.bootstrap, txn_id) for txn_id in ("app-1", "app-22", "xapp-1")]
    listed = tool(broker, "kafka-transactions", "list", "--transactional-id-pattern", "app-.*").splitlines()
    assert listed[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert sorted(line.split()[0] for line in listed[1:]) == ["app-1", "app-22"]  # matches(), not find()
    refused = failing(broker, "kafka-transactions", "list", "--transactional-id-pattern", "app-(?=1)")
    assert "failed because of an unexpected error INVALID_REGULAR_EXPRESSION" in refused, refused
    for args in ((), ("--include-fenced-brokers",)):
        endpoints = tool(broker, "kafka-cluster", "list-endpoints", *args).splitlines()
        assert endpoints[0].split() == ["ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE"]
        assert [line.split()[::4] for line in endpoints[1:]] == [["1", "unfenced"]], endpoints
    # Nothing is tiered: offset -1, which the tool leaves out, as against Kafka without remote storage.
    for spec in ("-6", "earliest-pending-upload"):
        assert tool(broker, "kafka-get-offsets", "--topic", "newest", "--time", spec).strip() == ""
    assert sorted(tool(broker, "kafka-get-offsets", "--topic", "newest", "--time", "-4").split()) == [
        "newest:0:0", "newest:1:0"]
    samples = Scraper(broker).samples()
    used = {(dict(labels)["request"], dict(labels)["version"]) for (name, labels), value in samples.items()
            if name == "kafka_network_requestmetrics_requests_total" and value > 0}
    assert {("ListTransactions", "2"), ("DescribeCluster", "2"), ("ListOffsets", "11")} <= used, sorted(used)
    del producers
