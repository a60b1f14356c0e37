"""Transactions V2 (KIP-890 part 2, issue 14) with Apache Kafka's own Java kafka-clients 4.4.0 (the
producer the Kafka 4.x CLI, Streams and Flink use), beside the V1 clients that never switch
(librdkafka, kafka-python). The broker's request metrics show which protocol each client used:
Produce v12+, EndTxn v5 and no AddPartitionsToTxn for V2."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.e2e.fault_proxy import FaultProxy
from tests.e2e.test_java_clients import classpath as spark_classpath
from tests.e2e.test_java_clients import compile_java, java4_jars
from tests.e2e.test_metrics import _METRICS_PORT as METRICS_PORT
from tests.e2e.test_metrics import Samples, Scraper
from tests.e2e.txn_clients import WAIT_S, confluent_read, create_topics, kafka_module, kafka_python_read, txn_producer
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).parent / "java" / "TxnV2Check.java"
SETTINGS = {"metrics.port": "0", "num.partitions": "2", "offsets.topic.num.partitions": "2",
            "transaction.state.log.num.partitions": "2", "group.initial.rebalance.delay.ms": "0",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java-tv2"), SOURCE, java4_jars(), "-nowarn")


@pytest.fixture(scope="module")
def compiled_39(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The same checks against kafka-clients 3.9 (Spark's), a client with no V2 code at all."""
    return compile_java(tmp_path_factory.mktemp("java-tv2-39"), SOURCE, spark_classpath(), "-nowarn")


@pytest.fixture(scope="module")
def fencing_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the fencing and timeout checks, which read no metrics and use transactional
    ids and topics of their own; checked for unexpected errors when the module ends."""
    broker = BrokerProcess(tmp_path_factory.mktemp("tv2-fencing") / "data", SETTINGS).start()
    try:
        yield broker
    finally:
        broker.close()


def run_check(cp: str, broker: BrokerProcess | str, *args: str) -> dict[str, str]:
    """Run one TxnV2Check mode against a broker (or a bootstrap list); its CHECK lines."""
    bootstrap = broker if isinstance(broker, str) else broker.bootstrap
    proc = subprocess.run(["java", "-cp", cp, "TxnV2Check", bootstrap, *args],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))


def samples_of(broker: BrokerProcess) -> Samples:
    """The broker's metrics; after a restart, those of the latest process (a new port)."""
    scraper = Scraper(broker)
    scraper.port = int([m for line in broker.log_lines if (m := METRICS_PORT.search(line))][-1][1])
    return scraper.samples()


def requests_by_version(samples: Samples, api: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for (name, labels), value in samples.items():
        found = dict(labels)
        if name == "kafka_network_requestmetrics_requests_total" and found.get("request") == api:
            out[int(found["version"])] = out.get(int(found["version"]), 0) + value
    return out


def assert_used_v2(samples: Samples) -> None:
    produce, end_txn = requests_by_version(samples, "Produce"), requests_by_version(samples, "EndTxn")
    assert produce and min(produce) >= 12, produce
    assert end_txn and set(end_txn) == {5}, end_txn
    assert requests_by_version(samples, "AddPartitionsToTxn") == {}


def test_java4_commits_aborts_and_aborts_empty_under_v2(compiled: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    checks = run_check(compiled, broker, "commit-abort", "v2-ca", "50")
    # committed: transactions 0 and 2 (50 each) and the last one (1); transaction 1 was aborted
    assert checks == {"read_committed": "101", "read_uncommitted": "151"}
    assert_used_v2(samples_of(broker))


def test_java4_zombie_is_fenced_under_v2(compiled: str, fencing_broker: BrokerProcess) -> None:
    broker = fencing_broker
    checks = run_check(compiled, broker, "fence", "v2-fence", "20")
    assert checks == {"zombie_commit": "ProducerFencedException", "read_committed": "1"}
    broker.expect_log(r"EndTxn v5 for 'fence-v2-fence' -> PRODUCER_FENCED")


def test_admin_fence_producers_fences_a_live_transactional_producer(compiled: str,
                                                                    fencing_broker: BrokerProcess) -> None:
    """Issue 36: Admin.fenceProducers bumps the epoch of a producer with an open transaction, which is
    aborted; the producer's next send and its commit fail with InvalidProducerEpochException, and
    read_committed sees none of its records: what the same program prints against Kafka 4.4."""
    broker = fencing_broker
    checks = run_check(compiled, broker, "fence-admin", "v2-fence-admin", "4")
    assert checks == {"fence_producers": "ok", "next_send": "InvalidProducerEpochException",
                      "commit": "InvalidProducerEpochException", "read_committed": "0", "read_uncommitted": "4"}


def test_java4_timed_out_transaction_is_aborted_and_its_producer_fenced(compiled: str,
                                                                        fencing_broker: BrokerProcess) -> None:
    broker = fencing_broker
    checks = run_check(compiled, broker, "timeout", "v2-timeout", "20")
    # Kafka 4.4 answers the late commit so too: the abort bumped the epoch once (KAFKA-19367), so
    # V2 reads the producer's epoch as a retry of the ended transaction, which was no commit
    assert checks == {"state_after_timeout": "CompleteAbort", "late_commit": "InvalidTxnStateException",
                      "read_committed": "0"}
    broker.expect_log(r"timed out after 1000 ms")


def test_java4_consume_transform_produce_under_v2(compiled: str, broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["ctp-in", "ctp-out"], 2)
    run_check(compiled, broker, "produce", "ctp-in", "200", "java-in", "commit")
    checks = run_check(compiled, broker, "ctp", "ctp-in", "200", "ctp-out")
    assert checks == {"copied": "200", "output_read_committed": "200"}
    samples = samples_of(broker)
    assert_used_v2(samples)
    assert requests_by_version(samples, "TxnOffsetCommit").keys() == {6}  # Kafka 4.4 names the topics by id (KIP-1319)
    assert requests_by_version(samples, "AddOffsetsToTxn") == {}
    # the group's offsets were committed with the transactions: a new reader of the group resumes at the end
    kafka = kafka_module()
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="ctp-ctp-in",
                                   enable_auto_commit=False)
    try:
        committed = [consumer.committed(kafka.TopicPartition("ctp-in", p)) for p in (0, 1)]
    finally:
        consumer.close()
    assert sum(committed) == 200


def test_v1_and_v2_producers_share_partitions_read_exactly_by_every_client(  # type: ignore[no-untyped-def]
        compiled: str, compiled_39: str, broker_factory) -> None:
    broker = broker_factory(SETTINGS)
    create_topics(broker.bootstrap, ["mixed"], 2)
    v1 = txn_producer(broker.bootstrap, "librdkafka-v1")
    for commit in (True, False, True):
        v1.begin_transaction()
        for i in range(30):
            v1.produce("mixed", f"v1-{commit}-{i}".encode(), partition=i % 2)
        v1.flush(WAIT_S)  # written, then committed or aborted
        v1.commit_transaction(WAIT_S) if commit else v1.abort_transaction(WAIT_S)
        run_check(compiled, broker, "produce", "mixed", "40", f"java-v2-{commit}", "commit" if commit else "abort")
    kafka = kafka_module()
    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kafka-python-v1")
    kp.init_transactions()
    kp.begin_transaction()
    for i in range(10):
        kp.send("mixed", f"kp-{i}".encode(), partition=i % 2)
    kp.commit_transaction()
    kp.close()
    committed = 2 * 30 + 2 * 40 + 10  # the aborted round (30 + 40) is invisible
    rows = confluent_read(broker.bootstrap, {"mixed": 2}, "read_committed", committed)
    assert len(rows) == committed
    assert not any(value.startswith((b"v1-False", b"a-")) for *_, value in rows)
    assert sorted(kafka_python_read(broker.bootstrap, {"mixed": 2}, committed)) == sorted(rows)
    for java in (compiled, compiled_39):  # kafka-clients 4.4.0 and 3.9 consumers
        checks = run_check(java, broker, "count", "mixed")
        assert checks == {"read_committed": str(committed), "read_uncommitted": str(committed + 70)}
    # both protocols were in use on the same partitions
    samples = samples_of(broker)
    end_txn = requests_by_version(samples, "EndTxn")
    assert 5 in end_txn and min(end_txn) < 5, end_txn
    assert requests_by_version(samples, "AddPartitionsToTxn")  # the V1 clients' adds


def feature_line(broker: BrokerProcess, name: str) -> list[str]:
    out = run_tool("kafka-features", "--bootstrap-server", broker.bootstrap, "describe", check=True).stdout
    return next(line.split() for line in out.splitlines() if line.split()[1] == name)


def test_kafka_features_downgrade_and_upgrade_are_durable_and_pick_the_protocol(  # type: ignore[no-untyped-def]
        compiled: str, broker_factory) -> None:
    broker = broker_factory(SETTINGS)
    out = run_tool("kafka-features", "--bootstrap-server", broker.bootstrap, "downgrade", "--feature",
                   "transaction.version=1", check=True).stdout
    assert "transaction.version was downgraded to 1." in out, out
    assert feature_line(broker, "transaction.version")[-3:] == ["1", "Epoch:", "1"]
    refused = run_tool("kafka-features", "--bootstrap-server", broker.bootstrap, "upgrade", "--feature",
                       "transaction.version=3")
    assert refused.returncode != 0 and "Local broker supports versions 0-2." in refused.stdout + refused.stderr
    # a 4.x producer keeps to V1 while the level is 1
    run_check(compiled, broker, "produce", "down", "5", "java-v1", "commit")
    samples = samples_of(broker)
    assert set(requests_by_version(samples, "EndTxn")) == {4}
    assert requests_by_version(samples, "AddPartitionsToTxn")
    broker.restart(kill=False)
    assert feature_line(broker, "transaction.version")[-3:] == ["1", "Epoch:", "1"]  # kept across the restart
    run_tool("kafka-features", "--bootstrap-server", broker.bootstrap, "upgrade", "--feature",
             "transaction.version=2", check=True)
    assert feature_line(broker, "transaction.version")[-3:] == ["2", "Epoch:", "2"]
    run_check(compiled, broker, "produce", "down", "5", "java-v2", "commit")
    assert_used_v2(samples_of(broker))
    assert run_check(compiled, broker, "count", "down") == {"read_committed": "10", "read_uncommitted": "10"}


def test_a_running_v1_producer_switches_to_v2_at_a_transaction_boundary(  # type: ignore[no-untyped-def]
        compiled: str, broker_factory) -> None:
    broker = broker_factory(SETTINGS | {"transaction.version": "1"})
    create_topics(broker.bootstrap, ["upgrade"], 2)
    java = subprocess.Popen(["java", "-cp", compiled, "TxnV2Check", broker.bootstrap, "upgrade", "upgrade", "10"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert java.stdout is not None and java.stdout.readline().strip() == "CHECK phase 1"
        assert set(requests_by_version(samples_of(broker), "EndTxn")) == {4}
        run_tool("kafka-features", "--bootstrap-server", broker.bootstrap, "upgrade", "--feature",
                 "transaction.version=2", check=True)
        # Java's producer reads the finalized level from ApiVersions, sent on a new connection
        broker.restart(kill=False)
        out, err = java.communicate("go\n", timeout=180)
    finally:
        java.kill()
    assert java.returncode == 0, out[-3000:] + err[-3000:]
    assert "CHECK read_committed 40" in out
    assert 5 in requests_by_version(samples_of(broker), "EndTxn")


ADD_PARTITIONS_TO_TXN = 24


def test_java4_producer_aborts_and_goes_on_after_transaction_abortable(  # type: ignore[no-untyped-def]
        compiled: str, broker_factory) -> None:
    """KIP-890 part 1 as Kafka 4.x answers it: a transactional batch to a partition its transaction
    does not hold is refused, and Produce v11 (which a 4.x producer sends while transaction.version
    is 1) gets TRANSACTION_ABORTABLE, not the fatal INVALID_TXN_STATE of older versions. A proxy
    makes the first AddPartitionsToTxn add abt-b/0 instead of abt-a/0 (and tells the client abt-a),
    the lost add KIP-890 guards against; the producer aborts and its next transaction commits."""
    rewritten: list[bytes] = []

    def rewrite(api_key: int, is_request: bool, frame: bytes) -> bytes:
        if api_key != ADD_PARTITIONS_TO_TXN:
            return frame
        if is_request and not rewritten and b"abt-a" in frame:
            rewritten.append(frame)
            return frame.replace(b"abt-a", b"abt-b")
        return frame if is_request else frame.replace(b"abt-b", b"abt-a")

    proxy = FaultProxy(drop=lambda api_key, n: False, rewrite=rewrite)
    broker = broker_factory(SETTINGS | {"transaction.version": "1",
                                        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
    proxy.start(broker.port)
    try:
        create_topics(broker.bootstrap, ["abt-a", "abt-b"], 2)
        checks = run_check(compiled, f"127.0.0.1:{proxy.port}", "abortable", "abt-a", "5")
    finally:
        proxy.close()
    assert rewritten
    assert checks == {"first_send": "TransactionAbortableException", "committed": "5", "read_committed": "5",
                      "read_uncommitted": "5"}
    assert set(requests_by_version(samples_of(broker), "Produce")) == {11}
