"""A SASL_PLAINTEXT listener's security with one PLAIN user, built as the broker builds it."""

from __future__ import annotations

from broker.listeners import Listener
from broker.security.listener_security import ListenerSecurity
from broker.security.sasl import SaslServerConfig

USER, PASSWORD = "alice", "alice-secret"


def listener(name: str = "CLIENT", protocol: str = "SASL_PLAINTEXT") -> Listener:
    return Listener(name=name, security_protocol=protocol, host="127.0.0.1", port=9092,
                    advertised_host="127.0.0.1", advertised_port=None)


def sasl_security(reauth_ms: int = 0) -> ListenerSecurity:
    config = SaslServerConfig(listener="CLIENT", mechanisms=("PLAIN",), plain_users={USER: PASSWORD},
                              scram_lookup=lambda user, mechanism: None, max_receive_size=524288,
                              reauth_ms=reauth_ms)
    return ListenerSecurity(listener=listener(), sasl=config)


def plain_token(user: str = USER, password: str = PASSWORD) -> bytes:
    return f"\0{user}\0{password}".encode()
