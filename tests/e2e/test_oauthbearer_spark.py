"""Spark's Kafka connector (kafka-clients 3.9 with Kafka's OAuthBearerLoginCallbackHandler; jose4j
comes with `make spark-jars`) reads over SASL_SSL with OAUTHBEARER at read_committed: exactly the
committed transfers, with the READ ACLs of its token's subject; another subject is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType
from confluent_kafka.admin import ResourceType as R

from pipeline.transfers import aborted_transfers, committed_transfers, multiset
from tests.broker_process import BrokerProcess
from tests.e2e.oauth_setup import LOGIN_MODULE, broker_settings
from tests.e2e.spark_support import batch_read, new_topic, plan, write_transactions
from tests.oidc_provider import CLIENTS, OidcProvider, available
from tests.tls_certs import TlsFiles

pytestmark = [pytest.mark.e2e, pytest.mark.spark,
              pytest.mark.skipif(available() is not None, reason=str(available()))]


@pytest.fixture(scope="module")
def provider_and_broker(tmp_path_factory: pytest.TempPathFactory,
                        tls_files: TlsFiles) -> Iterator[tuple[OidcProvider, BrokerProcess]]:
    root = tmp_path_factory.mktemp("oauth-spark")
    oidc = OidcProvider(root / "provider.log").start()
    try:
        with BrokerProcess(root / "data", broker_settings(oidc, "SASL_SSL") | tls_files.broker_settings()
                           ).start() as broker:
            yield oidc, broker
    finally:
        oidc.stop()


def spark_options(oidc: OidcProvider, tls: TlsFiles, client: str) -> dict[str, str]:
    """The consumer settings of a Java client logging in by client credentials (3.9's JAAS options)."""
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "sasl.oauthbearer.token.endpoint.url": oidc.token_url,
            "sasl.jaas.config": f'{LOGIN_MODULE} required clientId="{client}" clientSecret="{CLIENTS[client][0]}" '
                                'scope="kafka";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca)}


@pytest.mark.spark
def test_spark_reads_committed_transfers_with_an_oidc_token(spark: Any, provider_and_broker: tuple[OidcProvider,
                                                            BrokerProcess], tls_files: TlsFiles) -> None:
    oidc, broker = provider_and_broker
    topic = new_topic(broker.bootstrap, "transfers")
    txns = plan(20, seed=36, prefix="oauth")
    write_transactions(broker.bootstrap, topic, txns, "spark-oauth")  # PLAINTEXT, the operator's
    grants = [AclBinding(R.TOPIC, topic, ResourcePatternType.LITERAL, "User:spark", "*", AclOperation.READ,
                         AclPermissionType.ALLOW),
              # Spark's batch groups: spark-kafka-relation-<uuid>-...
              AclBinding(R.GROUP, "spark-kafka-", ResourcePatternType.PREFIXED, "User:spark", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_acls(grants).values():
        future.result(30)
    bootstrap = broker.bootstrap_of("SASL_SSL")
    got = batch_read(spark, bootstrap, topic, "read_committed", **spark_options(oidc, tls_files, "spark"))
    assert aborted_transfers(txns) and multiset(got) == multiset(committed_transfers(txns))
    with pytest.raises(Exception) as caught:  # noqa: B017 - py4j's or PySpark's, depending on where it fails
        batch_read(spark, bootstrap, topic, "read_committed", **spark_options(oidc, tls_files, "nobody"))
    assert "TopicAuthorizationException" in str(caught.value), str(caught.value)[-3000:]
