"""A listener's TLS and SASL set-up from Kafka's properties, and every start-up refusal with the
listener and the property named (key material is read once, here, at start-up)."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from broker.config import build_config
from broker.security.listener_security import ListenerSecurity, build_listener_security
from broker.startup import StartupError
from tests.tls_certs import SERVER_KEY_PASSWORD, TlsFiles

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
              'user_bob="bob-secret";')


def secure(props: dict[str, str], name: str) -> ListenerSecurity:
    config, unknown = build_config(props)
    assert unknown == []
    listener = next(li for li in config.client_listeners if li.name == name)
    return build_listener_security(config, listener, lambda _u, _m: None)


def refused(props: dict[str, str], name: str, *fragments: str) -> None:
    with pytest.raises(StartupError) as caught:
        secure(props, name)
    assert f"listener {name}:" in str(caught.value)
    for fragment in fragments:
        assert fragment in str(caught.value)
    assert SERVER_KEY_PASSWORD not in str(caught.value)


def test_pem_keystore_with_encrypted_pkcs8_key(tls_files: TlsFiles) -> None:
    security = secure({"listeners": "SSL://127.0.0.1:0"} | tls_files.broker_settings(client_auth="required"), "SSL")
    assert security.ssl_context is not None and security.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert security.ssl_context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert security.principal_mapper is not None and security.sasl is None


def test_inline_pem_key_and_chain_and_trusted_certificates(tls_files: TlsFiles) -> None:
    props = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
             "ssl.keystore.key": tls_files.server_key.read_text(), "ssl.key.password": SERVER_KEY_PASSWORD,
             # a properties value may join the PEM lines into one
             "ssl.keystore.certificate.chain": tls_files.server_cert.read_text().replace("\n", " "),
             "ssl.truststore.type": "PEM", "ssl.truststore.certificates": tls_files.ca.read_text(),
             "ssl.client.auth": "requested"}
    security = secure(props, "SSL")
    assert security.ssl_context is not None and security.ssl_context.verify_mode == ssl.CERT_OPTIONAL


def test_listener_prefixed_settings_win_and_sasl_ssl_ignores_the_global_client_auth(tls_files: TlsFiles) -> None:
    props = ({"listeners": "SASL_SSL://127.0.0.1:0,OTHER://127.0.0.1:0",
              "listener.security.protocol.map": "SASL_SSL:SASL_SSL,OTHER:SASL_SSL",
              "sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.client.auth": "required",
              "listener.name.other.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
              "listener.name.other.plain.sasl.jaas.config": PLAIN_JAAS,
              "listener.name.other.ssl.client.auth": "required"} | tls_files.broker_settings())
    sasl_ssl, other = secure(props, "SASL_SSL"), secure(props, "OTHER")
    assert sasl_ssl.sasl.mechanisms == ("SCRAM-SHA-512",)
    assert sasl_ssl.ssl_context is not None and sasl_ssl.ssl_context.verify_mode == ssl.CERT_NONE
    assert other.sasl.mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert other.sasl.plain_users == {"alice": "alice-secret", "bob": "bob-secret"}
    assert other.ssl_context is not None and other.ssl_context.verify_mode == ssl.CERT_REQUIRED


def _with(tls_files: TlsFiles, **changes: Any) -> dict[str, str]:
    props = {"listeners": "SSL://127.0.0.1:0"} | tls_files.broker_settings(client_auth="required")
    for key, value in changes.items():
        key = key.replace("_", ".")
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value
    return props


@pytest.mark.parametrize(("changes", "fragments"), [
    ({"ssl_key_password": "wrong"}, ("Failed to load SSL keystore", "wrong ssl.key.password")),
    ({"ssl_key_password": None}, ("private key is encrypted and ssl.key.password is not set",)),
    ({"ssl_keystore_location": "/nonexistent/keystore.pem"}, ("Failed to load SSL keystore /nonexistent",
                                                              "No such file")),
    ({"ssl_keystore_location": None}, ("no SSL key store",)),
    ({"ssl_keystore_type": None}, ("ssl.keystore.type=JKS", "PEM")),
    ({"ssl_keystore_password": "x"}, ("SSL key store password cannot be specified with PEM format",)),
    ({"ssl_truststore_location": "/nonexistent/ca.pem"}, ("Failed to load SSL truststore /nonexistent",)),
    ({"ssl_truststore_password": "x"}, ("SSL trust store password cannot be specified for PEM format",)),
    ({"ssl_enabled_protocols": "SSLv3"}, ("ssl.enabled.protocols=SSLv3",)),
    ({"ssl_principal_mapping_rules": "RULE:("}, ("ssl.principal.mapping.rules",)),
])
def test_tls_misconfiguration_is_a_clear_start_up_error(tls_files: TlsFiles, changes: dict[str, Any],
                                                        fragments: tuple[str, ...]) -> None:
    refused(_with(tls_files, **changes), "SSL", *fragments)


def test_a_keystore_that_is_not_pem(tmp_path: Path, tls_files: TlsFiles) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a key")
    refused(_with(tls_files, ssl_keystore_location=str(junk)), "SSL", "holds no PEM block")


@pytest.mark.parametrize(("props", "fragments"), [
    ({}, ("sasl.enabled.mechanisms=GSSAPI", "GSSAPI cannot be served")),
    ({"sasl.enabled.mechanisms": "PLAIN"}, ("listener.name.sasl_plaintext.plain.sasl.jaas.config is not set",)),
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x required"},
     ("not terminated by semi-colon",)),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER"},
     ("listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config is not set",)),
    ({"sasl.enabled.mechanisms": "PLAIN,GSSAPI"}, ("GSSAPI cannot be served",)),
])
def test_sasl_misconfiguration_is_a_clear_start_up_error(props: dict[str, str], fragments: tuple[str, ...]) -> None:
    refused({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"} | props, "SASL_PLAINTEXT", *fragments)
