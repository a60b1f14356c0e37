"""Security in cluster mode (issue 12): three brokers, each with a SASL_SSL client listener
(CLIENT), an inter-broker listener that requires SASL/SCRAM-SHA-512 over TLS (BROKER,
inter.broker.listener.name) and a PLAINTEXT listener for the harness's raw checks (its anonymous
principal is a super user here). SCRAM users and ACLs created through broker 1 work on the others
(they live in PostgreSQL), transaction markers travel between brokers over BROKER as the brokers'
own principal (which needs CLUSTER_ACTION, granted by an ACL), a broker with the wrong inter-broker
password cannot deliver its markers and says so (its peers deliver them once it is gone; users and
ACLs survive a restart of every broker), and Metadata over each listener answers with that
listener's endpoints."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.broker_process import BrokerProcess
from tests.e2e.cluster.conftest import CLUSTER_SETTINGS, WAIT_S, Cluster, wait_until
from tests.e2e.cluster.test_cluster_coordinators import TRANSACTION, coordinator_of
from tests.e2e.txn_clients import confluent_read
from tests.tls_certs import TlsFiles, make_tls_files

pytestmark = pytest.mark.e2e

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_admin="admin-secret" user_alice="alice-secret";')


def broker_jaas(password: str) -> str:
    return ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="broker" password="{password}";')


def settings(tls: TlsFiles, broker_password: str = "broker-secret") -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_SSL,BROKER:SASL_SSL",
        "inter.broker.listener.name": "BROKER",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.client.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.broker.scram-sha-512.sasl.jaas.config": broker_jaas(broker_password),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "request.timeout.ms": "5000",
        "transaction.state.log.num.partitions": "6",  # two coordinator shards for each broker
    } | tls.broker_settings()


def client(cluster: Cluster, tls: TlsFiles, node_id: int, user: str, password: str, mechanism: str = "PLAIN",
           listener: str = "CLIENT") -> dict[str, Any]:
    return {"bootstrap.servers": cluster.brokers[node_id].bootstrap_of(listener), "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(tls.ca), "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password}


def allow(principal: str, rtype: ResourceType, name: str, op: AclOperation,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, AclPermissionType.ALLOW)


def brokers_on(config: dict[str, Any]) -> dict[int, int]:
    """node id -> port, as Metadata over the config's listener answers."""
    metadata = AdminClient(config).list_topics(timeout=WAIT_S)
    return {b.id: b.port for b in metadata.brokers.values()}


def acls_on(cluster: Cluster, tls: TlsFiles, node_id: int) -> int:
    admin = AdminClient(client(cluster, tls, node_id, "admin", "admin-secret"))
    return len(admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                    AclOperation.ANY, AclPermissionType.ANY)).result(WAIT_S))


def setup_principals(cluster: Cluster, tls: TlsFiles) -> float:
    """Through broker 1 only: the SCRAM users (the brokers' own, carol), the ACLs (alice's, the
    brokers' CLUSTER_ACTION); returns how long until brokers 2 and 3 answered DescribeAcls with
    them (they poll the database)."""
    admin = AdminClient(client(cluster, tls, 1, "admin", "admin-secret"))
    users = [UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          password.encode())
             for user, password in (("broker", "broker-secret"), ("carol", "carol-secret"))]
    for future in admin.alter_user_scram_credentials(users).values():
        future.result(WAIT_S)
    acls = [allow("User:broker", ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION),
            allow("User:alice", ResourceType.TOPIC, "secure", AclOperation.WRITE),
            allow("User:alice", ResourceType.TRANSACTIONAL_ID, "tx-", AclOperation.WRITE,
                  ResourcePatternType.PREFIXED),
            allow("User:carol", ResourceType.TOPIC, "secure", AclOperation.DESCRIBE)]
    for future in admin.create_acls(acls).values():
        future.result(WAIT_S)
    created = time.monotonic()
    for node_id in (2, 3):
        wait_until(lambda n=node_id: acls_on(cluster, tls, n) == len(acls),  # type: ignore[misc]
                   f"broker {node_id} serving the ACLs created through broker 1")
    return time.monotonic() - created


def txn_id_coordinated_by(cluster: Cluster, node_id: int) -> str:
    return next(txn_id for txn_id in (f"tx-{i}" for i in range(200))
                if coordinator_of(cluster, TRANSACTION, txn_id) == node_id)


def test_brokers_talk_over_the_secure_listener_with_shared_users_and_acls(cluster: Cluster, tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path / "tls")
    for node_id in (1, 2, 3):
        cluster.brokers[node_id] = cluster_broker(cluster, node_id, settings(tls, "broker-secret"))
    cluster.start(1, 2, 3)
    print(f"ACLs created through broker 1 served by brokers 2 and 3 after {setup_principals(cluster, tls):.2f} s")

    # Metadata over each listener answers with that listener's endpoints, for every broker.
    for listener, config in (("CLIENT", client(cluster, tls, 2, "admin", "admin-secret")),
                             ("BROKER", client(cluster, tls, 2, "broker", "broker-secret", "SCRAM-SHA-512",
                                               "BROKER")),
                             ("PLAINTEXT", {"bootstrap.servers": cluster.brokers[2].bootstrap})):
        assert brokers_on(config) == {n: cluster.brokers[n].listener_ports[listener] for n in (1, 2, 3)}, listener

    admin = AdminClient(client(cluster, tls, 1, "admin", "admin-secret"))
    admin.create_topics([NewTopic("secure", 3, 1)])["secure"].result(WAIT_S)
    leaders = {p: leader for p, (leader, _) in cluster.settled("secure").items()}
    assert sorted(leaders.values()) == [1, 2, 3], leaders
    # A SCRAM user created through broker 1 logs in to broker 2.
    carol = client(cluster, tls, 2, "carol", "carol-secret", "SCRAM-SHA-512")
    assert "secure" in AdminClient(carol).list_topics(timeout=WAIT_S).topics

    # alice's transactions through broker 2, coordinated by broker 1: markers to 2 and 3.
    producer = Producer(client(cluster, tls, 2, "alice", "alice-secret")
                        | {"transactional.id": txn_id_coordinated_by(cluster, 1), "linger.ms": 5})
    producer.init_transactions(WAIT_S)
    expected = run_transactions(producer, commit_then_abort=True)
    rows = confluent_read(cluster.bootstrap(), {"secure": 3}, "read_committed", len(expected))
    assert sorted(value for *_, value in rows) == sorted(expected)
    for node_id in (2, 3):  # the markers came in on BROKER, as the brokers' principal
        assert cluster.brokers[node_id].wait_for_log(
            r"WriteTxnMarkers from User:broker on listener BROKER \(SASL_SSL\)"), node_id
    assert not any("WriteTxnMarkers from User:broker on listener PLAINTEXT" in line
                   for n in (1, 2, 3) for line in cluster.brokers[n].log_lines)

    # Broker 3 comes back logging in to the others with the wrong password. (It could not lead a
    # partition of a transaction coordinated elsewhere meanwhile: a leader verifies each
    # transactional batch with the coordinator over this same inter-broker listener.)
    cluster.brokers[3].stop()
    cluster.ended.add(3)
    cluster.brokers[3] = cluster_broker(cluster, 3, settings(tls, "wrong-secret"))
    cluster.brokers[3].expect_log("cannot log in to broker")
    cluster.start(3)
    cluster.settled("secure")
    cluster.settled("__transaction_state")

    # Broker 3 coordinates: its markers to brokers 1 and 2 fail to log in, and it says why.
    stuck = Producer(client(cluster, tls, 3, "alice", "alice-secret")
                     | {"transactional.id": txn_id_coordinated_by(cluster, 3), "linger.ms": 5})
    stuck.init_transactions(WAIT_S)
    stuck.begin_transaction()
    for p in range(3):
        stuck.produce("secure", value=b"stuck-%d" % p, partition=p)
    stuck.commit_transaction(WAIT_S)  # the decision is durable; the markers are what waits
    line = cluster.brokers[3].wait_for_log(r"ERROR .*cannot log in to broker [12] .*listener BROKER \(SASL_SSL\)"
                                           r".*SASL_AUTHENTICATION_FAILED")
    assert line is not None and "wrong-secret" not in line
    assert sorted(brokers_on({"bootstrap.servers": cluster.brokers[3].bootstrap})) == [1, 2, 3]  # still serving

    # Every broker restarts; without broker 3, brokers 1 and 2 take its coordinator shards and
    # deliver the markers it could not: the users and ACLs they need came back from the database.
    for node_id in (3, 1, 2):
        cluster.brokers[node_id].stop()
        cluster.ended.add(node_id)
    cluster.start(1, 2)
    rows = confluent_read(cluster.bootstrap(), {"secure": 3}, "read_committed", len(expected) + 3)
    assert sorted(value for *_, value in rows) == sorted([*expected, b"stuck-0", b"stuck-1", b"stuck-2"])
    assert "secure" in AdminClient(client(cluster, tls, 1, "carol", "carol-secret", "SCRAM-SHA-512")).list_topics(
        timeout=WAIT_S).topics


def cluster_broker(cluster: Cluster, node_id: int, extra: dict[str, str]) -> BrokerProcess:
    """What cluster.start makes, with settings of this node's own."""
    return BrokerProcess(cluster.root / f"node{node_id}", {
        **CLUSTER_SETTINGS, **extra, "cluster.url": cluster.url, "node.id": str(node_id)})


def run_transactions(producer: Producer, commit_then_abort: bool) -> list[bytes]:
    """A committed then an aborted transaction over the three partitions; the committed values."""
    committed: list[bytes] = []
    for round_, commit in enumerate((True, False) if commit_then_abort else (True,)):
        producer.begin_transaction()
        for p in range(3):
            value = b"r%d-p%d" % (round_, p)
            producer.produce("secure", value=value, partition=p)
            if commit:
                committed.append(value)
        if commit:
            producer.commit_transaction(WAIT_S)
        else:
            producer.flush(WAIT_S)
            producer.abort_transaction(WAIT_S)
    return committed
