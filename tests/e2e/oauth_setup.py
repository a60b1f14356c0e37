"""A broker validating SASL/OAUTHBEARER tokens of a real OIDC provider (tests/oidc_provider.py),
with the StandardAuthorizer, and the ACLs a transactional client needs, granted per principal."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
)
from confluent_kafka.admin import ResourceType as R

from tests.broker_process import BrokerProcess
from tests.oidc_provider import AUDIENCE, OidcProvider

__all__ = ("broker_settings", "grant_transactional", "new_topic", "oauth_broker", "oidc")

VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def broker_settings(oidc: OidcProvider, listener: str = "SASL_PLAINTEXT", jaas_options: str = "",
                    **extra: str) -> dict[str, str]:
    """PLAINTEXT (User:ANONYMOUS, the super user that grants ACLs) and `listener` with OAUTHBEARER
    (`jaas_options` in its JAAS config)."""
    prefix = f"listener.name.{listener.lower()}.oauthbearer.sasl"
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:0,{listener}://127.0.0.1:0",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        f"{prefix}.jaas.config": f"{LOGIN_MODULE} required {jaas_options};",
        f"{prefix}.server.callback.handler.class": VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": oidc.jwks_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": oidc.issuer,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
    } | extra


def grant_transactional(bootstrap: str, principal: str, topic: str, txn_id: str, group: str) -> None:
    """What Kafka's docs list for a transactional producer and a read_committed consumer."""
    def allow(kind: R, name: str, operation: AclOperation) -> AclBinding:
        return AclBinding(kind, name, ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)

    acls = [allow(R.TOPIC, topic, AclOperation.WRITE), allow(R.TOPIC, topic, AclOperation.READ),
            allow(R.TOPIC, topic, AclOperation.DESCRIBE), allow(R.TOPIC, topic, AclOperation.CREATE),
            allow(R.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE), allow(R.GROUP, group, AclOperation.READ)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_acls(acls).values():
        future.result(30)


@pytest.fixture(scope="module")
def oidc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    provider = OidcProvider(tmp_path_factory.mktemp("oidc") / "provider.log").start()
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def oauth_broker(tmp_path_factory: pytest.TempPathFactory, oidc: OidcProvider) -> Iterator[BrokerProcess]:
    """One second of clock skew, so that a test's expired token need not wait Kafka's default 30."""
    broker = BrokerProcess(tmp_path_factory.mktemp("oauth") / "data",
                           broker_settings(oidc, **{"sasl.oauthbearer.clock.skew.seconds": "1"})).start()
    try:
        yield broker
    finally:
        broker.close()


def new_topic(broker: BrokerProcess, principal: str | None) -> str:
    """A new topic, and the ACLs for a transactional round trip on it (transactional id tx-<topic>,
    group g-<topic>) when `principal` is given."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # held until the answer: no early destroy
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    if principal is not None:
        grant_transactional(broker.bootstrap, principal, topic, f"tx-{topic}", f"g-{topic}")
    return topic
