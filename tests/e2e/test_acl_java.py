"""Java clients and Spark under ACLs over SASL_SSL (issue 12). The stock kafka-clients, both Spark's
3.9 and Kafka's 4.x (which commits offsets in a transaction without AddOffsetsToTxn, KIP-890):
with the ACLs Kafka's documentation lists, a transactional producer commits and aborts and a
read_committed consumer reads exactly the committed records; without each ACL the client throws
the exception Kafka maps from the broker's error; another principal cannot fence a producer's
transactional id. Spark's Kafka source at read_committed reads exactly the committed records with
READ on the topic and on Spark's group prefix, and without READ the query fails with Kafka's
authorization error instead of waiting. User:admin (SASL) and User:ANONYMOUS (the PLAINTEXT
listener, the operator's) are super users; the others log in with SASL/PLAIN."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from pipeline.transfers import aborted_transfers, committed_transfers, multiset
from tests.broker_process import REPO, BrokerProcess
from tests.e2e.spark_support import batch_read, plan, write_transactions
from tests.e2e.test_java_clients import classpath, compile_java
from tests.kafka_tools import run_tool
from tests.tls_certs import CLIENT_SUBJECT, TlsFiles

pytestmark = pytest.mark.e2e

WAIT_S = 30.0
SOURCE = Path(__file__).parent / "java" / "AclCheck.java"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "mallory": "mallory-secret", "eve": "eve-secret",
         "spark": "spark-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in USERS.items()) + ";")
T, G, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
# (principal, resource type, name, pattern, operation): what each principal may do, nothing more
# (AclCheck.java's names end in each run's suffix: ledger-39, tx-alice-4x, ...)
GRANTS = [
    ("alice", T, "ledger", PREFIXED, AclOperation.WRITE), ("alice", T, "ledger", PREFIXED, AclOperation.READ),
    ("alice", T, "drop", PREFIXED, AclOperation.WRITE),  # WRITE (so DESCRIBE) but not READ
    ("alice", X, "tx-alice", PREFIXED, AclOperation.WRITE), ("alice", G, "alice-", PREFIXED, AclOperation.READ),
    ("mallory", T, "ledger", PREFIXED, AclOperation.WRITE),
    ("mallory", X, "tx-mallory", PREFIXED, AclOperation.WRITE),
    ("eve", T, "ledger", PREFIXED, AclOperation.DESCRIBE),  # no WRITE on any topic: no idempotent producer id
    ("spark", T, "transfers", LITERAL, AclOperation.READ),
    # Spark's groups: spark-kafka-source-<uuid>-... (streaming), spark-kafka-relation-<uuid>-... (batch)
    ("spark", G, "spark-kafka-", PREFIXED, AclOperation.READ),
    ("eve", T, "transfers", LITERAL, AclOperation.DESCRIBE),  # may list its offsets, not READ it
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, tls_files: TlsFiles) -> Iterator[BrokerProcess]:
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:admin;User:ANONYMOUS", "offsets.topic.num.partitions": "1",
                "transaction.state.log.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
                } | tls_files.broker_settings(client_auth="required")  # on SSL: mTLS
    with BrokerProcess(tmp_path_factory.mktemp("acl-java") / "data", settings).start() as broker:
        admin = AdminClient(client_config(broker, tls_files, "admin"))
        topics = [NewTopic(f"{name}-{version}", 1, 1) for name in ("ledger", "secret", "drop")
                  for version in ("39", "4x")] + [NewTopic("transfers", 3, 1)]
        for future in admin.create_topics(topics).values():
            future.result(WAIT_S)
        acls = [AclBinding(rtype, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)
                for user, rtype, name, pattern, operation in GRANTS]
        for future in admin.create_acls(acls).values():
            future.result(WAIT_S)
        yield broker


def client_config(broker: BrokerProcess, tls: TlsFiles, user: str) -> dict[str, str]:
    return {"bootstrap.servers": broker.bootstrap_of("SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(tls.ca), "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": USERS[user]}


def java_classpath(version: str, out: Path) -> str:
    if version == "3.9":  # Spark's
        return compile_java(out, SOURCE, classpath(), "-nowarn")
    tools = REPO / "tools" / "kafka-tools"
    jars = sorted(tools.glob("kafka-clients-4.*.jar"))
    jars += [j for j in tools.glob("*.jar") if j.name.startswith(("slf4j-api", "zstd-jni", "lz4-java", "snappy"))]
    return compile_java(out, SOURCE, jars, "-nowarn")


@pytest.mark.parametrize("version", ["3.9", "4x"])
def test_java_transactions_under_acls_and_each_missing_acl(broker: BrokerProcess, tls_files: TlsFiles,
                                                           tmp_path: Path, version: str) -> None:
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nssl.truststore.type=PEM\n"
                     f"ssl.truststore.location={tls_files.ca}\n")
    cp = java_classpath(version, tmp_path / "classes")
    proc = subprocess.run(["java", "-cp", cp, "AclCheck", broker.bootstrap_of("SASL_SSL"),
                           "-" + version.replace(".", "")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CHECK_CLIENT_CONFIG=str(props)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("CHECK "))
    assert checks == {
        "allowed_read_committed": "3",
        "no_write_on_topic": "TopicAuthorizationException",
        "no_read_on_topic": "TopicAuthorizationException",
        "no_read_on_group": "GroupAuthorizationException",
        "no_group_for_txn_offsets": "GroupAuthorizationException",
        "txn_offsets_with_group": "ok",
        "no_write_on_txn_id": "TransactionalIdAuthorizationException",
        "no_idempotent_write": "ClusterAuthorizationException",  # Kafka 4's KafkaApis still asks for it
        "fence_anothers_txn_id": "TransactionalIdAuthorizationException",
        "owner_commits_after": "ok",
        "committed_in_the_end": "4",
    }, proc.stdout[-3000:] + proc.stderr[-3000:]


def spark_options(tls: TlsFiles, user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                f'username="{user}" password="{USERS[user]}";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca)}


@pytest.mark.spark
def test_spark_reads_exactly_the_committed_records_under_acls(spark: Any, broker: BrokerProcess,
                                                              tls_files: TlsFiles) -> None:
    txns = plan(20, seed=11, prefix="acl")
    write_transactions(broker.bootstrap, "transfers", txns, "spark-acl")  # PLAINTEXT, the operator's
    bootstrap = broker.bootstrap_of("SASL_SSL")
    got = batch_read(spark, bootstrap, "transfers", "read_committed", **spark_options(tls_files, "spark"))
    assert aborted_transfers(txns) and multiset(got) == multiset(committed_transfers(txns))

    with pytest.raises(Exception) as caught:  # noqa: B017 - py4j's or PySpark's, depending on where it fails
        batch_read(spark, bootstrap, "transfers", "read_committed", **spark_options(tls_files, "eve"))
    assert "TopicAuthorizationException" in str(caught.value), str(caught.value)[-3000:]
    assert "Not authorized to access topics: [transfers]" in str(caught.value), str(caught.value)[-3000:]


def cli_properties(tls: TlsFiles, user: str, path: Path) -> Path:
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="{user}" password="{USERS[user]}";\n'
                    f"ssl.truststore.type=PEM\nssl.truststore.location={tls.ca}\n")
    return path


def tool(broker: BrokerProcess, name: str, config: Path, *args: str, input: str | None = None,
         ok: bool = True) -> str:
    """One of Kafka's CLI tools through the SASL_SSL listener; its stdout and stderr."""
    flag = "--command-config"
    out = run_tool(name, "--bootstrap-server", broker.bootstrap_of("SASL_SSL"), flag, str(config), *args,
                   input=input)
    assert (out.returncode == 0) is ok, f"{name} {args}: {out.stdout}{out.stderr}"
    return out.stdout + out.stderr


def test_kafka_cli_tools_over_sasl_ssl_and_an_mtls_principal_under_acls(broker: BrokerProcess, tls_files: TlsFiles,
                                                                        tmp_path: Path) -> None:
    admin = cli_properties(tls_files, "admin", tmp_path / "admin.properties")
    alice = cli_properties(tls_files, "alice", tmp_path / "alice.properties")
    tool(broker, "kafka-topics", admin, "--create", "--topic", "ledger-cli", "--partitions", "2")
    assert "ledger-cli" in tool(broker, "kafka-topics", alice, "--list").split()  # alice may DESCRIBE it
    assert "secret-39" not in tool(broker, "kafka-topics", alice, "--list").split()  # but not this one
    assert "PartitionCount: 2" in tool(broker, "kafka-topics", admin, "--describe", "--topic", "ledger-cli")

    tool(broker, "kafka-console-producer", alice, "--topic", "ledger-cli", input="one\ntwo\n")
    consumed = run_tool("kafka-console-consumer", "--bootstrap-server", broker.bootstrap_of("SASL_SSL"),
                        "--command-config", str(alice), "--topic", "ledger-cli", "--group", "alice-cli",
                        "--from-beginning", "--max-messages", "2")
    assert sorted(consumed.stdout.split()) == ["one", "two"], consumed.stdout + consumed.stderr

    # kafka-acls over SASL_SSL: the mTLS client's principal, its subject as Kafka writes it
    principal = f"User:{CLIENT_SUBJECT}"
    tool(broker, "kafka-acls", admin, "--add", "--allow-principal", principal, "--operation", "Write",
         "--topic", "mtls")
    listed = tool(broker, "kafka-acls", admin, "--list", "--principal", principal)
    assert f"(principal={principal}, host=*, operation=WRITE, permissionType=ALLOW)" in listed, listed
    refused = tool(broker, "kafka-acls", alice, "--list", ok=False)  # only with ALTER on the cluster
    assert "ClusterAuthorizationException" in refused, refused

    mtls = {"bootstrap.servers": broker.bootstrap_of("SSL"), "security.protocol": "SSL",
            "ssl.ca.location": str(tls_files.ca), "ssl.certificate.location": str(tls_files.client_cert),
            "ssl.key.location": str(tls_files.client_key)}
    admin_client = AdminClient(client_config(broker, tls_files, "admin"))  # kept: a dropped client ends its calls
    admin_client.create_topics([NewTopic("mtls", 1, 1)])["mtls"].result(WAIT_S)
    assert deliver(mtls, "mtls") is None
    refused_write = deliver(mtls, "ledger-cli")
    assert refused_write is not None and refused_write.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    tool(broker, "kafka-acls", admin, "--remove", "--allow-principal", principal, "--operation", "Write",
         "--topic", "mtls", "--force")
    refused_write = deliver(mtls, "mtls")
    assert refused_write is not None and refused_write.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def deliver(config: dict[str, str], topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer(config | {"message.timeout.ms": 15000})
    producer.produce(topic, value=b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(WAIT_S)
    assert len(errors) == 1
    return errors[0]
