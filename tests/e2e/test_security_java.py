"""Java over TLS and SASL (issue 12): the stock kafka-clients (Spark's version) on every listener
and mechanism (SSL with a client certificate, SASL_PLAINTEXT with PLAIN and SCRAM-SHA-256, SASL_SSL
with PLAIN and both SCRAMs), transactions and read_committed included; each way to fail
authentication gives the Java client Kafka's exception for it while the broker goes on serving;
Kafka's own kafka-configs (4.4.0) adding a SCRAM user that then logs in with the console producer
and consumer; Spark's Kafka source at read_committed over SASL_SSL reading exactly the committed
records."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.transfers import aborted_transfers, committed_transfers, multiset
from tests.broker_process import BrokerProcess
from tests.e2e.security_setup import CASES, java_properties
from tests.e2e.spark_support import batch_read, new_topic, plan, write_transactions
from tests.e2e.test_java_clients import SOURCE, classpath, compile_java, run_check
from tests.kafka_tools import run_tool
from tests.tls_certs import TlsFiles

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("java"), SOURCE, classpath())


@pytest.fixture(scope="module")
def client_checks(compiled: str, secure_broker: BrokerProcess, tls_files: TlsFiles,
                  tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """ClientCheck on every listener and mechanism, all in one JVM (one JVM and kafka-clients start
    instead of six): each case's CHECK lines. Transactions on two of them (the rest produce and
    consume)."""
    tmp = tmp_path_factory.mktemp("java-cases")
    cases = []
    for case in sorted(CASES):
        props = java_properties(secure_broker, tls_files, case, tmp / f"{case}.properties")
        mode, n = _mode_and_count(case)
        cases.append(f"{case}|{secure_broker.bootstrap_of(CASES[case][0])}|java-{case}|{n}|{mode}|{props}")
    proc = subprocess.run(["java", "-cp", compiled, "ClientCheck", "--cases", *cases],
                          capture_output=True, text=True, timeout=290)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    by_case: dict[str, dict[str, str]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("CASE "):
            checks = by_case.setdefault(line.split()[1], {"stderr": proc.stderr[-3000:]})
        elif line.startswith("CHECK "):
            _, name, value = line.split(maxsplit=2)
            checks[name] = value
    return by_case


def _mode_and_count(case: str) -> tuple[str, int]:
    return ("txn", 300) if case in ("ssl-mtls", "sasl_ssl-scram-sha-512") else ("", 50)


@pytest.mark.parametrize("case", sorted(CASES))
def test_java_clients_over_tls_and_sasl(client_checks: dict[str, dict[str, str]], case: str) -> None:
    """Every listener and mechanism; transactions on two of them (the rest produce and consume)."""
    mode, n = _mode_and_count(case)
    checks = client_checks[case]
    assert "failed" not in checks, checks["failed"] + checks["stderr"]
    assert checks["topic_listed"] == "true" and checks["read_committed_aborted_seen"] == "0"
    assert checks["read_committed"] == str(2 * n if mode else n)  # plain + committed, never the aborted


def _failing_properties(broker: BrokerProcess, tls: TlsFiles, tmp_path: Path) -> list[str]:
    """AuthFailureCheck's arguments, label|bootstrap|file|timeout, one per way to fail."""
    out = []

    def add(label: str, case: str, *, replace: tuple[tuple[str, str], ...] = (),
            keystore: tuple[Path, Path] | None = None) -> None:
        path = java_properties(broker, tls, case, tmp_path / f"{label}.properties")
        text = path.read_text()
        for old, new in replace:
            assert old in text, (old, text)
            text = text.replace(old, new)
        if keystore is not None:  # another client certificate in the PEM key store
            store = tmp_path / f"{label}.keystore.pem"
            store.write_bytes(keystore[1].read_bytes() + keystore[0].read_bytes())
            text = text.replace(str(path.with_suffix(".keystore.pem")), str(store))
        path.write_text(text)
        # a failure that is not an authentication error is a timeout: short; the others fail at once,
        # unless the machine is too loaded to finish a TLS handshake in time: long
        timeout_ms = 6000 if "plaintext" in label else 60000
        out.append(f"{label}|{broker.bootstrap_of(CASES[case][0])}|{path}|{timeout_ms}")

    add("wrong_password", "sasl_ssl-plain", replace=(('password="alice-secret"', 'password="wrong"'),))
    add("unknown_user", "sasl_plaintext-scram-sha-256", replace=(('username="bob"', 'username="mallory"'),))
    add("wrong_mechanism", "sasl_plaintext-plain", replace=(("sasl.mechanism=PLAIN", "sasl.mechanism=SCRAM-SHA-512"),
                                                           ("plain.PlainLoginModule", "scram.ScramLoginModule")))
    add("expired_certificate", "ssl-mtls", keystore=(tls.expired_cert, tls.expired_key))
    add("untrusted_certificate", "ssl-mtls", keystore=(tls.untrusted_cert, tls.untrusted_key))
    add("plaintext_on_tls_port", "ssl-mtls", replace=(("security.protocol=SSL", "security.protocol=PLAINTEXT"),))
    return out


def test_java_authentication_failures_are_clean_and_the_broker_keeps_serving(
        compiled: str, secure_broker: BrokerProcess, tls_files: TlsFiles, tmp_path: Path) -> None:
    cp = compile_java(tmp_path / "classes", SOURCE.with_name("AuthFailureCheck.java"), classpath())
    proc = subprocess.run(["java", "-cp", cp, "AuthFailureCheck", *_failing_properties(secure_broker, tls_files,
                                                                                        tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split(maxsplit=2)[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    failed_with = {label: name for label, name in checks.items() if "." not in label}
    assert failed_with == {
        "wrong_password": "SaslAuthenticationException", "unknown_user": "SaslAuthenticationException",
        "wrong_mechanism": "UnsupportedSaslMechanismException",
        "expired_certificate": "SslAuthenticationException", "untrusted_certificate": "SslAuthenticationException",
        "plaintext_on_tls_port": "TimeoutException",  # the broker closes it; the client retries till its deadline
    }, proc.stdout
    assert "Invalid username or password" in checks["wrong_password.message"]
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in checks["unknown_user.message"]
    # the broker goes on serving Java clients
    props = java_properties(secure_broker, tls_files, "sasl_ssl-plain", tmp_path / "ok.properties")
    ok = run_check(compiled, secure_broker, "java-after-failures", 10,
                   bootstrap=secure_broker.bootstrap_of("SASL_SSL"), client_config=props)
    assert ok["read_committed"] == "10"


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
