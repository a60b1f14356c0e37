"""SASL/OAUTHBEARER in cluster mode (issue 36): three brokers validate the tokens of a real OIDC
provider on their client listener (CLIENT) and talk to each other over BROKER with OAUTHBEARER too,
each logging in with a token it gets itself by client credentials (sasl.oauthbearer.token.endpoint.url,
sasl.oauthbearer.client.credentials.*). A librdkafka client with sasl.oauthbearer.method=oidc runs
transactions through one broker coordinated by another, so the markers travel between brokers as
User:broker, and a read_committed consumer through the third reads exactly the committed records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.e2e.cluster.conftest import WAIT_S, Cluster, wait_until
from tests.e2e.cluster.test_cluster_security import allow, run_transactions, txn_id_coordinated_by
from tests.e2e.oauth_setup import LOGIN_MODULE, VALIDATOR
from tests.e2e.txn_clients import confluent_read
from tests.oidc_provider import AUDIENCE, CLIENTS, OidcProvider, available

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]


@pytest.fixture
def oidc(tmp_path: Path) -> Iterator[OidcProvider]:
    provider = OidcProvider(tmp_path / "provider.log").start()
    yield provider
    provider.stop()


def settings(oidc: OidcProvider) -> dict[str, str]:
    listeners = {f"listener.name.{name}.oauthbearer.sasl.{key}": value for name in ("client", "broker")
                 for key, value in (("jaas.config", f"{LOGIN_MODULE} required ;"),
                                    ("server.callback.handler.class", VALIDATOR))}
    return listeners | {
        "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "BROKER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.jwks.endpoint.url": oidc.jwks_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": oidc.issuer,
        "sasl.oauthbearer.token.endpoint.url": oidc.token_url,
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.client.credentials.client.id": "broker",
        "sasl.oauthbearer.client.credentials.client.secret": CLIENTS["broker"][0],
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",  # the harness's PLAINTEXT listener
        "request.timeout.ms": "5000",
        "transaction.state.log.num.partitions": "6",
    }


def oidc_client(cluster: Cluster, oidc: OidcProvider, node_id: int, client: str) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.brokers[node_id].bootstrap_of("CLIENT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.scope": "kafka",
            "sasl.oauthbearer.client.id": client, "sasl.oauthbearer.client.secret": CLIENTS[client][0],
            "sasl.oauthbearer.token.endpoint.url": oidc.token_url}


ACLS = [allow("User:broker", ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION),
        *(allow("User:alice", ResourceType.TOPIC, "secure", op)
          for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)),
        allow("User:alice", ResourceType.TRANSACTIONAL_ID, "tx-", AclOperation.WRITE, ResourcePatternType.PREFIXED),
        allow("User:alice", ResourceType.GROUP, "*", AclOperation.READ)]


def test_three_brokers_with_oauthbearer_clients_and_between_brokers(cluster: Cluster, oidc: OidcProvider) -> None:
    cluster.start(1, 2, 3, settings=settings(oidc))
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap})
    admin.create_topics([NewTopic("secure", 3, 1)])["secure"].result(WAIT_S)
    for future in admin.create_acls(ACLS).values():
        future.result(WAIT_S)
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    for node_id in (2, 3):
        peer = AdminClient({"bootstrap.servers": cluster.brokers[node_id].bootstrap})
        wait_until(lambda p=peer: len(p.describe_acls(everything).result(WAIT_S)) == len(ACLS),  # type: ignore[misc]
                   f"broker {node_id} serving the ACLs created through broker 1")
    leaders = {p: leader for p, (leader, _) in cluster.settled("secure").items()}
    assert sorted(leaders.values()) == [1, 2, 3], leaders

    # Through broker 2, coordinated by broker 1: the markers go to brokers 2 and 3 over BROKER.
    producer = Producer(oidc_client(cluster, oidc, 2, "alice")
                        | {"transactional.id": txn_id_coordinated_by(cluster, 1), "linger.ms": 5})
    producer.init_transactions(WAIT_S)
    expected = run_transactions(producer, commit_then_abort=True)
    reader = oidc_client(cluster, oidc, 3, "alice")
    rows = confluent_read(reader["bootstrap.servers"], {"secure": 3}, "read_committed", len(expected),
                          **{k: v for k, v in reader.items() if k != "bootstrap.servers"})
    assert sorted(value for *_, value in rows) == sorted(expected)
    for node_id in (2, 3):  # the markers came in on BROKER, as the brokers' token's subject
        assert cluster.brokers[node_id].wait_for_log(
            r"WriteTxnMarkers from User:broker on listener BROKER \(SASL_PLAINTEXT\)"), node_id
    assert not any("cannot log in" in line or CLIENTS["broker"][0] in line
                   for n in (1, 2, 3) for line in cluster.brokers[n].log_lines)
