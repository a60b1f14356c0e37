"""Kafka 4.4.0 tools the other tool tests do not run, against the broker: what they print is what
they print against Apache Kafka 4.x, or (for what eosbroker does not have) a clear refusal."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.e2e.test_kafka_tools import config_lines, failing, tool
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e


@pytest.fixture
def broker(module_broker: BrokerProcess) -> BrokerProcess:
    """The tests here share one broker (tests/e2e/conftest.py's module_broker): none restarts it,
    and each names topics, groups and ids of its own. test_dump_log_reads_the_data_dir,
    which reads every internal log, has its own."""
    return module_broker


def test_client_metrics_and_config_listings_use_list_config_resources(broker: BrokerProcess) -> None:
    """kafka-client-metrics --list/--describe and kafka-configs --describe of client-metrics list
    the resources with ListConfigResources (KIP-1142) first; before eosbroker answered it they
    failed with "The node does not support LIST_CONFIG_RESOURCES". eosbroker keeps no
    client-metrics resources (no client telemetry, KIP-714): the lists are empty, and creating one
    is refused saying so (it said "resource type 16 is not supported")."""
    assert tool(broker, "kafka-client-metrics", "--list").strip() == ""
    assert tool(broker, "kafka-client-metrics", "--describe").strip() == ""
    assert tool(broker, "kafka-client-metrics", "--describe", "--name", "cm1").strip() == \
        "The client metric resource cm1 doesn't exist and doesn't have dynamic config."
    assert tool(broker, "kafka-configs", "--describe", "--entity-type", "client-metrics").strip() == ""
    refusal = failing(broker, "kafka-client-metrics", "--alter", "--name", "cm1", "--metrics",
                      "org.apache.kafka.producer.", "--interval", "10000")
    assert "InvalidRequestException: eosbroker keeps no client-metrics resources: it has no client telemetry " \
           "(KIP-714: GetTelemetrySubscriptions, PushTelemetry); nothing was changed" in refusal, refusal
    # A group with configs of its own is listed (ListConfigResources' GROUP type) and described,
    # each config with the broker setting behind its default as Kafka 4.4 prints it (the synonym
    # was missing, and Kafka's internal *.assignor.offload.enable keys were listed).
    tool(broker, "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", "g1",
         "--add-config", "consumer.session.timeout.ms=50000")
    out = tool(broker, "kafka-configs", "--describe", "--entity-type", "groups")
    assert "Dynamic configs for group g1 are:\n  consumer.session.timeout.ms=50000 sensitive=false " \
           "synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, " \
           "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n" in out, out
    every = config_lines(tool(broker, "kafka-configs", "--describe", "--all", "--entity-type", "groups",
                              "--entity-name", "g1"))
    assert every["share.delivery.count.limit"] == \
        "5 sensitive=false synonyms={DEFAULT_CONFIG:group.share.delivery.count.limit=5}", every
    assert every["share.isolation.level"] == \
        "read_uncommitted sensitive=false synonyms={DEFAULT_CONFIG:share.isolation.level=read_uncommitted}", every
    assert not [name for name in every if "offload" in name], every


def test_delegation_tokens_are_refused_as_kafka_refuses_them_on_plaintext(broker: BrokerProcess,
                                                                          tmp_path: Path) -> None:
    """kafka-delegation-tokens failed with "The node does not support CREATE_DELEGATION_TOKEN";
    eosbroker has no tokens and now answers as Kafka with token authentication disabled, which on
    a PLAINTEXT listener is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED."""
    config = tmp_path / "admin.properties"
    config.write_text("")
    for args in (("--describe",), ("--create", "--max-life-time-period", "-1"),
                 ("--renew", "--hmac", "abc", "--renew-time-period", "-1"),
                 ("--expire", "--hmac", "abc", "--expiry-time-period", "-1")):
        out = failing(broker, "kafka-delegation-tokens", "--command-config", str(config), *args)
        assert "UnsupportedByAuthenticationException: Delegation Token requests are not allowed on PLAINTEXT/1-way " \
               "SSL channels and on delegation token authenticated channels." in out, out


def events(out: str) -> list[dict[str, Any]]:
    """The JSON lines a Verifiable* tool or the copier prints (the rest is log)."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_verifiable_producer_and_consumer(broker: BrokerProcess, tmp_path: Path, protocol: str) -> None:
    """Kafka's system-test clients: an idempotent VerifiableProducer's 300 acked records are the
    300 a VerifiableConsumer of either group protocol reads and commits, with and without
    auto-commit."""
    topic = f"verifiable-{protocol}"
    tool(broker, "kafka-topics", "--create", "--topic", topic, "--partitions", "3")
    config = tmp_path / "producer.properties"
    config.write_text("enable.idempotence=true\nacks=all\nretries=10\n")  # the tool sets retries=0
    produced = events(tool(broker, "kafka-verifiable-producer", "--topic", topic, "--max-messages", "300",
                           "--command-config", str(config), "--repeating-keys", "7"))
    assert produced[-1]["name"] == "tool_data" and (produced[-1]["sent"], produced[-1]["acked"]) == (300, 300)
    ends = {}
    for p in range(3):
        acked = [e["offset"] for e in produced if e["name"] == "producer_send_success" and e["partition"] == p]
        ends[p] = max(acked, default=-1) + 1
    for auto in ((), ("--enable-autocommit",)):
        group = f"vc-{protocol}-{len(auto)}"
        consumed = events(tool(broker, "kafka-verifiable-consumer", "--topic", topic, "--group-id", group,
                               "--group-protocol", protocol, "--max-messages", "300", *auto))
        names = [e["name"] for e in consumed]
        assert names[0] == "startup_complete" and "shutdown_complete" in names, names
        assert sum(e["count"] for e in consumed if e["name"] == "records_consumed") == 300
        commits = [e for e in consumed if e["name"] == "offsets_committed"]
        assert all(c["success"] for c in commits), commits
        if not auto:  # the tool reports the commits it makes itself
            last = {(o["partition"]): o["offset"] for c in commits for o in c["offsets"]}
            assert last == {p: end for p, end in ends.items() if end}, (last, ends)
        described = tool(broker, "kafka-consumer-groups", "--describe", "--group", group)
        lags = [line.split()[5] for line in described.splitlines() if line.startswith(group)]
        assert lags and set(lags) == {"0"}, described


def test_transactional_message_copier_copies_exactly_once(broker: BrokerProcess) -> None:
    """TransactionalMessageCopier (Kafka's transactions system test) with random aborts, in group
    mode with the group-metadata API and with the old sendOffsetsToTransaction: what a
    read_committed consumer reads is each input record once."""
    tool(broker, "kafka-topics", "--create", "--topic", "copy-in", "--partitions", "2")
    tool(broker, "kafka-topics", "--create", "--topic", "copy-out", "--partitions", "2")
    tool(broker, "kafka-verifiable-producer", "--topic", "copy-in", "--max-messages", "400")
    for partition, mode in ((0, ("--use-group-metadata",)), (1, ())):
        out = run_tool("transactional-message-copier", "--broker-list", broker.bootstrap, "--input-topic", "copy-in",
                       "--input-partition", str(partition), "--output-topic", "copy-out",
                       "--transactional-id", f"copier-{partition}", "--consumer-group", f"copier-{partition}",
                       "--transaction-size", "25", "--enable-random-aborts", *mode)
        assert out.returncode == 0, out.stdout + out.stderr
        last = events(out.stdout)[-1]
        assert last["stage"] == "ShutdownComplete" and last["remaining"] == 0, last
    copied = run_tool("kafka-console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "copy-out",
                      "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", "5000")
    values = [line for line in copied.stdout.splitlines() if line.isdigit()]
    assert sorted(values, key=int) == [str(i) for i in range(400)], copied.stderr


def test_dump_log_reads_the_data_dir(broker_factory: Any) -> None:
    """kafka-dump-log on the broker's segment files: a transactional partition's batches and
    markers, its transaction index, its offset and time indexes, and __consumer_offsets and
    __transaction_state with Kafka's own decoders."""
    broker = broker_factory()
    tool(broker, "kafka-topics", "--create", "--topic", "dumped", "--partitions", "1")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "dump-txn"})
    producer.init_transactions()
    for commit in (True, False):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("dumped", value=f"v{i}".encode(), key=b"k")
        producer.flush()  # else the abort drops the records unsent
        producer.commit_transaction() if commit else producer.abort_transaction()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "dump-group",
                         "auto.offset.reset": "earliest"})
    consumer.commit(offsets=[TopicPartition("dumped", 0, 3)], asynchronous=False)
    consumer.close()
    # A consumer-protocol (KIP-848) member: its current assignment record has KIP-1251's epochs.
    member = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "dump-848", "group.protocol": "consumer"})
    member.subscribe(["dumped"])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "no assignment"
        member.poll(0.2)
    member.close()
    segment = broker.data_dir / "dumped-0" / f"{0:020d}"
    out = tool_local("--files", f"{segment}.log", "--print-data-log", "--deep-iteration")
    assert out.count("isTransactional: true isControl: false") == 2, out
    assert "endTxnMarker: COMMIT coordinatorEpoch: 0" in out and "endTxnMarker: ABORT coordinatorEpoch: 0" in out
    assert "key: k payload: v2" in out, out
    assert "producerId: " in tool_local("--files", f"{segment}.txnindex")  # the aborted transaction
    out = tool_local("--files", f"{segment}.index,{segment}.timeindex", "--index-sanity-check")
    assert out.count("passed sanity check") == 2, out
    offsets = "".join(tool_local("--files", str(p), "--offsets-decoder")
                      for p in sorted(broker.data_dir.glob("__consumer_offsets-*/*.log")) if p.stat().st_size)
    assert '"data":{"group":"dump-group","topic":"dumped","partition":0}} payload: {"version":"3","data":' \
           '{"offset":3,' in offsets, offsets
    assert '"assignedPartitions":[{"topicId":' in offsets and '"partitions":[0],"assignmentEpochs":[1]}]' in offsets, \
        offsets
    txns = "".join(tool_local("--files", str(p), "--transaction-log-decoder")
                   for p in sorted(broker.data_dir.glob("__transaction_state-*/*.log")) if p.stat().st_size)
    assert 'key: {"type":"0","data":{"transactionalId":"dump-txn"}} payload: {"version":"1","data":' in txns, txns
    # Kafka 4.4 prints the state's name for the status byte (5 and 4 here), 4.3 the number.
    assert '"transactionStatus":"CompleteAbort"' in txns and '"transactionStatus":"CompleteCommit"' in txns, txns
    assert "Unknown" not in txns and "Exception" not in txns, txns  # no record of eosbroker's own


def tool_local(*args: str) -> str:
    """kafka-dump-log, which reads files and talks to no broker."""
    out = run_tool("kafka-dump-log", *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout
