"""A broker validating SASL/OAUTHBEARER tokens of a real OIDC provider (tests/oidc_provider.py),
with the StandardAuthorizer, and the ACLs a transactional client needs, granted per principal."""

from __future__ import annotations

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType
from confluent_kafka.admin import ResourceType as R

from tests.oidc_provider import AUDIENCE, OidcProvider

__all__ = ("broker_settings", "grant_transactional")

VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def broker_settings(oidc: OidcProvider, **extra: str) -> dict[str, str]:
    """PLAINTEXT (User:ANONYMOUS, the super user that grants ACLs) and SASL_PLAINTEXT with OAUTHBEARER."""
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{LOGIN_MODULE} required ;",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": VALIDATOR,
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
