"""How a cluster broker reaches the others (broker/security/inter_broker_auth.py): Kafka's choice of
the inter-broker listener and its start-up refusals, and the client side of SCRAM against the
broker's own server side."""

from __future__ import annotations

import ssl

import pytest

from broker.config import build_config
from broker.security.inter_broker_auth import InterBrokerSecurity, build_inter_broker_security
from broker.security.sasl_errors import AuthenticationFailed
from broker.security.scram import MECHANISMS, ScramServer, credential_from_salted_password, salted_password
from broker.security.scram_client import ScramClient
from broker.startup import StartupError
from tests.tls_certs import TlsFiles

LISTENERS = {"listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL"}
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
              'password="broker-secret";')


def security(props: dict[str, str]) -> InterBrokerSecurity:
    config, unknown = build_config(props)
    assert unknown == []
    return build_inter_broker_security(config)


def refused(props: dict[str, str], *fragments: str) -> None:
    with pytest.raises(StartupError) as caught:
        security(props)
    for fragment in fragments:
        assert fragment in str(caught.value)
    assert "broker-secret" not in str(caught.value)


def test_the_plaintext_listener_by_default_and_a_protocols_own_listener() -> None:
    assert security({}) == InterBrokerSecurity(listener_name="PLAINTEXT", security_protocol="PLAINTEXT")
    refused({"listeners": "CLIENT://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:PLAINTEXT"},
            "security.inter.broker.protocol must be a listener name", "CLIENT")
    refused(LISTENERS | {"inter.broker.listener.name": "INTERNAL", "security.inter.broker.protocol": "PLAINTEXT"},
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    refused(LISTENERS | {"inter.broker.listener.name": "REPLICATION"}, "inter.broker.listener.name", "REPLICATION",
            "PLAINTEXT,INTERNAL")


def test_sasl_needs_a_supported_enabled_mechanism_and_the_brokers_credentials(tls_files: TlsFiles) -> None:
    base = LISTENERS | tls_files.broker_settings() | {"inter.broker.listener.name": "internal"}
    refused(base, "sasl.mechanism.inter.broker.protocol=GSSAPI (Kafka default, Kerberos) is not supported",
            "SCRAM-SHA-512")
    scram = base | {"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}
    refused(scram, "must be included in sasl.enabled.mechanisms", "INTERNAL")
    enabled = scram | {"listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    refused(enabled, "listener.name.internal.scram-sha-512.sasl.jaas.config")
    refused(enabled | {"listener.name.internal.scram-sha-512.sasl.jaas.config":
                       "org.apache.kafka.common.security.scram.ScramLoginModule required;"}, 'username="..."')
    found = security(enabled | {"listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS})
    assert (found.listener_name, found.security_protocol, found.sasl_mechanism, found.username, found.password) == (
        "INTERNAL", "SASL_SSL", "SCRAM-SHA-512", "broker", "broker-secret")
    assert "broker-secret" not in repr(found)
    context = found.ssl_context
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert len(context.get_ca_certs()) == 1  # the listener's trust store verifies the peers
    unchecked = security(enabled | {"listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
                                    "ssl.endpoint.identification.algorithm": ""})
    assert unchecked.ssl_context is not None and not unchecked.ssl_context.check_hostname


def test_oauthbearer_between_brokers_needs_the_token_endpoint_and_client_credentials(tls_files: TlsFiles) -> None:
    base = LISTENERS | tls_files.broker_settings() | {
        "inter.broker.listener.name": "internal", "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.internal.sasl.enabled.mechanisms": "OAUTHBEARER"}
    refused(base, "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.client.credentials.client.id")
    new_keys = security(base | {"sasl.oauthbearer.token.endpoint.url": "https://idp.test/token",
                                "sasl.oauthbearer.client.credentials.client.id": "broker",
                                "sasl.oauthbearer.client.credentials.client.secret": "broker-secret",
                                "sasl.oauthbearer.scope": "kafka"})
    assert new_keys.oauth is not None and new_keys.sasl_mechanism == "OAUTHBEARER"
    assert (new_keys.oauth.token_url, new_keys.oauth.client_id, new_keys.oauth.client_secret,
            new_keys.oauth.scope) == ("https://idp.test/token", "broker", "broker-secret", "kafka")
    assert "broker-secret" not in repr(new_keys)
    jaas = security(base | {"listener.name.internal.sasl.oauthbearer.token.endpoint.url": "https://idp.test/token",
                            "listener.name.internal.oauthbearer.sasl.jaas.config":
                                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                'clientId="b2" clientSecret="broker-secret" scope="s";'})
    assert jaas.oauth is not None and (jaas.oauth.client_id, jaas.oauth.scope) == ("b2", "s")


@pytest.mark.parametrize("name", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_scram_client_logs_in_to_the_scram_server_and_checks_its_signature(name: str) -> None:
    mechanism = MECHANISMS[name]
    salt = b"0123456789abcdef"
    stored = credential_from_salted_password(mechanism, salted_password(mechanism, "pw", salt, 4096), salt, 4096)

    def exchange(password: str, forged_final: bytes | None = None) -> None:
        client, server = ScramClient(mechanism, "broker", password), ScramServer(mechanism, lambda _u, _m: stored)
        final = server.evaluate(client.final_message(server.evaluate(client.first_message())))
        client.check_server_final(forged_final or final)

    exchange("pw")
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        exchange("wrong")
    with pytest.raises(AuthenticationFailed, match="does not verify"):
        exchange("pw", forged_final=b"v=" + b"AAAA" * 11)
