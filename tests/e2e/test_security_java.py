"""Java over TLS and SASL (issue 12): the stock kafka-clients (Spark's version) with a client
certificate and with SCRAM-SHA-512 on SASL_SSL, transactions and read_committed included; Kafka's
own kafka-configs (4.3.1) adding a SCRAM user that then logs in with the console producer and
consumer; Spark's Kafka source at read_committed over SASL_SSL reading exactly the committed
records."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.transfers import aborted_transfers, committed_transfers, multiset
from tests.broker_process import BrokerProcess
from tests.e2e.security_setup import java_properties
from tests.e2e.spark_support import batch_read, new_topic, plan, write_transactions
from tests.e2e.test_java_clients import SOURCE, classpath, compile_java, run_check
from tests.kafka_tools import run_tool
from tests.tls_certs import TlsFiles

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java"), SOURCE, classpath())


@pytest.mark.parametrize(("case", "mode"), [("ssl-mtls", ()), ("sasl_ssl-scram-sha-512", ("txn",))])
def test_java_clients_over_tls_and_sasl(compiled: str, secure_broker: BrokerProcess, tls_files: TlsFiles,
                                        tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    listener = "SSL" if case == "ssl-mtls" else "SASL_SSL"
    props = java_properties(secure_broker, tls_files, case, tmp_path / "client.properties")
    checks = run_check(compiled, secure_broker, f"java-{case}", 300, *mode,
                       bootstrap=secure_broker.bootstrap_of(listener), client_config=props)
    assert checks["topic_listed"] == "true" and checks["read_committed_aborted_seen"] == "0"
    assert checks["read_committed"] == ("600" if mode else "300")  # plain + committed, never the aborted


def test_kafka_configs_adds_a_scram_user_who_then_logs_in(secure_broker: BrokerProcess, tls_files: TlsFiles,
                                                          tmp_path: Path) -> None:
    admin = java_properties(secure_broker, tls_files, "sasl_ssl-scram-sha-256", tmp_path / "admin.properties")
    bootstrap = secure_broker.bootstrap_of("SASL_SSL")
    # One mechanism per request: Kafka's ScramControlManager refuses two changes to a user in one.
    for config in ("SCRAM-SHA-256=[iterations=8192,password=dave-secret]", "SCRAM-SHA-512=[password=x]"):
        added = run_tool("kafka-configs", "--bootstrap-server", bootstrap, "--command-config", str(admin),
                         "--alter", "--add-config", config, "--entity-type", "users", "--entity-name", "dave")
        assert added.returncode == 0, added.stdout + added.stderr
        assert "Completed updating config for user dave." in added.stdout
    described = run_tool("kafka-configs", "--bootstrap-server", bootstrap, "--command-config", str(admin),
                         "--describe", "--entity-type", "users", "--entity-name", "dave")
    assert "SCRAM-SHA-256=iterations=8192" in described.stdout and "SCRAM-SHA-512=iterations=4096" in \
        described.stdout, described.stdout + described.stderr
    assert not secure_broker.logged("dave-secret")
    dave = tmp_path / "dave.properties"
    dave.write_text(admin.read_text().replace('username="bob" password="bob-secret"',
                                              'username="dave" password="dave-secret"'))
    produced = run_tool("kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", "dave-topic",
                        "--command-config", str(dave), input="one\ntwo\n")
    assert produced.returncode == 0, produced.stdout + produced.stderr
    consumed = run_tool("kafka-console-consumer", "--bootstrap-server", bootstrap, "--topic", "dave-topic",
                        "--from-beginning", "--max-messages", "2", "--command-config", str(dave))
    assert consumed.stdout.split() == ["one", "two"], consumed.stderr


@pytest.mark.spark
def test_spark_reads_exactly_the_committed_records_over_sasl_ssl(spark, secure_broker: BrokerProcess,  # type: ignore[no-untyped-def]
                                                                  tls_files: TlsFiles) -> None:
    topic = new_topic(secure_broker.bootstrap, "spark-sasl-ssl")
    txns = plan(20, seed=7, prefix="s")
    write_transactions(secure_broker.bootstrap, topic, txns, "spark-sasl-ssl")  # through PLAINTEXT
    got = batch_read(spark, secure_broker.bootstrap_of("SASL_SSL"), topic, "read_committed",
                     **{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                            'username="carol" password="carol-secret";',
                        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls_files.ca)})
    assert aborted_transfers(txns) and multiset(got) == multiset(committed_transfers(txns))
