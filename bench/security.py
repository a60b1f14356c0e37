"""TLS and SASL_SSL listeners for the security cases (issue 12): both brokers get the same
listeners, the same key store (the test CA's server certificate, tests/tls_certs.py), PLAIN users
from the listener's JAAS config, a SCRAM-SHA-512 user added through AlterUserScramCredentials,
and OAUTHBEARER validating the tokens of one OIDC provider (tests/oidc_provider.py, started once
per run on loopback; issue 36), so that the t cases compare like with like."""

from __future__ import annotations

import atexit
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from tests.oidc_provider import AUDIENCE, OidcProvider
from tests.tls_certs import TlsFiles, make_tls_files

USER, PASSWORD = "bench", "bench-secret"
LISTENERS = ("SSL", "SASL_SSL")
PLAIN_JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{USER}="{PASSWORD}";'
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
_PROVIDER: list[OidcProvider] = []  # the run's one provider, started on first use


def oidc_provider(workdir: Path) -> OidcProvider:
    if not _PROVIDER:
        _PROVIDER.append(OidcProvider(workdir / "oidc-provider.log").start())
        atexit.register(_PROVIDER[0].stop)
    return _PROVIDER[0]


@dataclass(frozen=True, slots=True)
class Security:
    tls: TlsFiles
    ports: dict[str, int]  # listener name -> port, besides PLAINTEXT's
    oidc: OidcProvider

    @classmethod
    def make(cls, workdir: Path, free_port: object) -> Security:
        return cls(make_tls_files(workdir / "tls"), {name: free_port() for name in LISTENERS},  # type: ignore[operator]
                   oidc_provider(workdir))

    @property
    def jvm_options(self) -> tuple[str, ...]:
        """What a Kafka JVM needs to fetch the provider's keys (Kafka 4's allow-list)."""
        return (f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self.oidc.jwks_url}",)

    def broker_settings(self, host: str, plaintext_port: int) -> dict[str, str]:
        listeners = [f"PLAINTEXT://{host}:{plaintext_port}"] + [f"{n}://{host}:{p}" for n, p in self.ports.items()]
        return {"listeners": ",".join(listeners), "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.tls.server_keystore_unencrypted),
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
                # Kafka wants a login module for every mechanism (its options serve inter-broker use).
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": f"{OAUTH_MODULE} required ;",
                "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": OAUTH_VALIDATOR,
                "sasl.oauthbearer.jwks.endpoint.url": self.oidc.jwks_url,
                "sasl.oauthbearer.expected.audience": AUDIENCE,
                "sasl.oauthbearer.expected.issuer": self.oidc.issuer}

    def client(self, host: str, listener: str, mechanism: str = "PLAIN") -> dict[str, str]:
        """confluent-kafka settings for one listener."""
        config = {"bootstrap.servers": f"{host}:{self.ports[listener]}", "security.protocol": listener,
                  "ssl.ca.location": str(self.tls.ca)}
        if listener == "SASL_SSL":
            config |= {"sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": PASSWORD}
        return config


def add_scram_user(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    change = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([change]).values():
        future.result(timeout=60)
