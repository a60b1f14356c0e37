"""ACLs between principals authenticated with SASL/PLAIN (SASL_PLAINTEXT): one principal cannot
take over, fence, abort or even see another's transactional id, while the owner's transaction goes
on untouched and commits; an operator with ALTER on the CLUSTER aborts it with kafka-transactions.
confluent-kafka clients; User:admin is the super user who grants the ACLs."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory
from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e

WAIT_S = 30.0
USERS = {"admin": "admin-secret", "alice": "alice-secret", "mallory": "mallory-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in USERS.items()) + ";")


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    return broker_factory({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
    })


def config(broker: BrokerProcess, user: str) -> dict[str, str]:
    return {"bootstrap.servers": broker.bootstrap_of("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


def allow(principal: str, resource: ResourceType, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(resource, name, ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)


def test_a_principal_cannot_fence_abort_or_see_anothers_transactional_id(broker: BrokerProcess,
                                                                            tmp_path: Path) -> None:
    admin = AdminClient(config(broker, "admin"))
    admin.create_topics([NewTopic("ledger", 1, 1)])["ledger"].result(WAIT_S)
    grants = [allow("User:alice", ResourceType.TOPIC, "ledger", AclOperation.WRITE),
              allow("User:alice", ResourceType.TRANSACTIONAL_ID, "tx-alice", AclOperation.WRITE),
              allow("User:mallory", ResourceType.TOPIC, "ledger", AclOperation.WRITE),
              allow("User:mallory", ResourceType.TRANSACTIONAL_ID, "tx-mallory", AclOperation.WRITE)]
    for future in admin.create_acls(grants).values():
        future.result(WAIT_S)

    alice = Producer(config(broker, "alice") | {"transactional.id": "tx-alice"})
    alice.init_transactions(WAIT_S)
    alice.begin_transaction()
    alice.produce("ledger", value=b"alice's")
    alice.flush(WAIT_S)

    mallory = Producer(config(broker, "mallory") | {"transactional.id": "tx-alice"})
    with pytest.raises(KafkaException) as caught:
        mallory.init_transactions(WAIT_S)  # would fence alice's producer and abort her transaction
    refused: KafkaError = caught.value.args[0]
    assert refused.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "User:mallory is not authorized to DESCRIBE TRANSACTIONAL_ID 'tx-alice'" in refused.str()

    # mallory's own transactional id works, and so does alice's transaction, untouched
    own = Producer(config(broker, "mallory") | {"transactional.id": "tx-mallory"})
    own.init_transactions(WAIT_S)
    alice.commit_transaction(WAIT_S)

    # nor may mallory look at alice's transaction with Kafka's own kafka-transactions
    props = tmp_path / "mallory.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                     "org.apache.kafka.common.security.plain.PlainLoginModule required "
                     f'username="mallory" password="{USERS["mallory"]}";\n')
    described = run_tool("kafka-transactions", "--bootstrap-server", broker.bootstrap_of("SASL_PLAINTEXT"),
                         "--command-config", str(props), "describe", "--transactional-id", "tx-alice")
    assert described.returncode != 0
    # (the tool's FindCoordinator for the id is refused: DESCRIBE on TRANSACTIONAL_ID)
    assert "`tx-alice`" in described.stderr and "failed due to authorization failure" in described.stderr, described
