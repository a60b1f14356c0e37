"""A broker with every kind of listener (PLAINTEXT, SSL with client certificates required,
SASL_PLAINTEXT with PLAIN and SCRAM-SHA-256, SASL_SSL with PLAIN and both SCRAMs) and SCRAM users, shared by the
security e2e tests, and each client's configuration for it."""

from __future__ import annotations

import os
from pathlib import Path

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from tests.broker_process import BrokerProcess
from tests.tls_certs import TlsFiles

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
              'user_alice="alice-secret";')
# user, mechanism, password: created with AlterUserScramCredentials before the tests run
SCRAM_USERS = (("bob", "SCRAM-SHA-256", "bob-secret"), ("carol", "SCRAM-SHA-512", "carol-secret"))
# case -> (listener, SASL mechanism or None, user, password)
CASES = {
    "ssl-mtls": ("SSL", None, None, None),
    "sasl_plaintext-plain": ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"),
    "sasl_plaintext-scram-sha-256": ("SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret"),
    "sasl_ssl-plain": ("SASL_SSL", "PLAIN", "alice", "alice-secret"),
    "sasl_ssl-scram-sha-256": ("SASL_SSL", "SCRAM-SHA-256", "bob", "bob-secret"),
    "sasl_ssl-scram-sha-512": ("SASL_SSL", "SCRAM-SHA-512", "carol", "carol-secret"),
}


def broker_settings(tls: TlsFiles) -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",  # not SCRAM-SHA-512
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0", "metrics.port": "0",
    } | tls.broker_settings(client_auth="required")  # required on SSL; SASL_SSL ignores the global value


def add_scram_users(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    mechanisms = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}
    changes = [UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanisms[mech], 8192), password.encode())
               for user, mech, password in SCRAM_USERS]
    for future in admin.alter_user_scram_credentials(changes).values():
        future.result(timeout=30)


def confluent_config(broker: BrokerProcess, tls: TlsFiles, case: str) -> dict[str, str]:
    listener, mechanism, user, password = CASES[case]
    config = {"bootstrap.servers": broker.bootstrap_of(listener), "security.protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        config["ssl.ca.location"] = str(tls.ca)
    if listener == "SSL":
        config |= {"ssl.certificate.location": str(tls.client_cert), "ssl.key.location": str(tls.client_key)}
    if mechanism is not None:
        config |= {"sasl.mechanism": mechanism, "sasl.username": user or "", "sasl.password": password or ""}
    return config


def kafka_python_config(broker: BrokerProcess, tls: TlsFiles, case: str) -> dict[str, object]:
    listener, mechanism, user, password = CASES[case]
    config: dict[str, object] = {"bootstrap_servers": broker.bootstrap_of(listener), "security_protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        config["ssl_cafile"] = str(tls.ca)
    if listener == "SSL":
        config |= {"ssl_certfile": str(tls.client_cert), "ssl_keyfile": str(tls.client_key)}
    if mechanism is not None:
        config |= {"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
    return config


def java_properties(broker: BrokerProcess, tls: TlsFiles, case: str, path: Path) -> Path:
    """A client .properties file (for the Java checks and Kafka's CLI tools)."""
    listener, mechanism, user, password = CASES[case]
    lines = [f"security.protocol={listener}"]
    if listener in ("SSL", "SASL_SSL"):
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={tls.ca}"]
    if listener == "SSL":
        keystore = path.with_suffix(".keystore.pem")
        keystore.write_bytes(tls.client_key.read_bytes() + tls.client_cert.read_bytes())
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
    if mechanism is not None:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        lines += [f"sasl.mechanism={mechanism}",
                  f'sasl.jaas.config={module} required username="{user}" password="{password}";']
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path
