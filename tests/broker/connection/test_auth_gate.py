"""broker/connection/auth_gate.py with no connection: what passes before SASL completes, what a
session's expiry refuses, and when the gate stops watching."""

from __future__ import annotations

import pytest

from broker.connection.auth_gate import AuthGate, Step, api_key_of
from broker.principal import ANONYMOUS
from broker.security.listener_security import ListenerSecurity
from broker.security.sasl import SaslState
from broker.security.sasl_errors import AuthenticationFailed
from protocol.api_keys import ApiKey
from tests.broker.connection.sasl_listener import listener, plain_token, sasl_security


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def login(gate: AuthGate, token: bytes | None = None) -> Step:
    """SaslHandshake v1 then SaslAuthenticate, as their handlers drive the SASL state."""
    assert gate.sasl is not None
    assert gate.handled(ApiKey.API_VERSIONS) is Step.NONE
    gate.sasl.handshake("PLAIN", 1)
    assert gate.handled(ApiKey.SASL_HANDSHAKE) is Step.NONE
    try:
        gate.sasl.authenticate(token or plain_token())
    except AuthenticationFailed:
        pass
    return gate.handled(ApiKey.SASL_AUTHENTICATE)


def test_a_plaintext_listener_lets_everything_through_as_anonymous() -> None:
    gate = AuthGate(ListenerSecurity(listener=listener("PLAIN", "PLAINTEXT")))
    assert not gate.watching and gate.refusal(ApiKey.METADATA) is None
    assert gate.session.principal == ANONYMOUS


@pytest.mark.parametrize("api_key", [ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.SASL_AUTHENTICATE, 999])
def test_a_request_before_the_sasl_handshake_is_refused(api_key: int) -> None:
    gate = AuthGate(sasl_security())
    reason = gate.refusal(api_key)
    assert reason is not None and "before authentication (state HANDSHAKE_OR_VERSIONS)" in reason
    assert gate.refusal(ApiKey.API_VERSIONS) is None and gate.refusal(ApiKey.SASL_HANDSHAKE) is None


def test_after_the_handshake_only_sasl_authenticate_passes() -> None:
    gate = AuthGate(sasl_security())
    assert gate.sasl is not None
    gate.sasl.handshake("PLAIN", 1)
    assert gate.refusal(ApiKey.SASL_AUTHENTICATE) is None
    assert "(state AUTHENTICATE)" in (gate.refusal(ApiKey.METADATA) or "")


def test_a_login_without_a_session_lifetime_stops_the_gate_watching() -> None:
    gate = AuthGate(sasl_security())
    gate.connected("10.0.0.7:4000", "10.0.0.7")
    assert login(gate) is Step.AUTHENTICATED
    assert str(gate.session.principal) == "User:alice" and gate.session.client_host == "10.0.0.7"
    assert not gate.watching


def test_a_failed_login_is_a_failed_step() -> None:
    gate = AuthGate(sasl_security())
    assert login(gate, plain_token(password="wrong")) is Step.FAILED
    assert gate.session.principal == ANONYMOUS and gate.watching


def test_an_expired_session_refuses_the_next_request_but_not_a_reauthentication() -> None:
    clock = Clock()
    gate = AuthGate(sasl_security(reauth_ms=60_000), clock)
    assert gate.sasl is not None
    assert login(gate) is Step.AUTHENTICATED
    assert gate.watching  # the session has a lifetime: every request is checked against it
    expires = gate.sasl.session_expires
    assert expires is not None
    clock.now = expires - 0.001
    assert gate.refusal(ApiKey.METADATA) is None
    clock.now = expires
    reason = gate.refusal(ApiKey.METADATA)
    assert reason is not None and "METADATA request after the SASL session of User:alice expired" in reason
    assert "its lifetime was 60000 ms: connections.max.reauth.ms=60000" in reason
    assert gate.refusal(ApiKey.SASL_HANDSHAKE) is None  # KIP-368: the client re-authenticates
    gate.sasl.handshake("PLAIN", 1)
    gate.sasl.authenticate(plain_token())
    assert gate.handled(ApiKey.SASL_AUTHENTICATE) is Step.NONE  # the same principal again
    assert gate.sasl.session_expires is not None and gate.sasl.session_expires > expires


def test_a_raw_token_after_handshake_v0_is_answered_framed() -> None:
    gate = AuthGate(sasl_security())
    assert gate.sasl is not None
    gate.sasl.handshake("PLAIN", 0)
    assert gate.expects_raw_token
    assert gate.raw_token(plain_token()) == b"\x00\x00\x00\x00"  # PLAIN's empty answer
    assert gate.step() is Step.AUTHENTICATED and gate.sasl.state is SaslState.COMPLETE


def test_a_wrong_raw_token_fails_without_an_answer() -> None:
    gate = AuthGate(sasl_security())
    assert gate.sasl is not None
    gate.sasl.handshake("PLAIN", 0)
    assert gate.raw_token(plain_token(password="nope")) is None
    assert gate.step() is Step.FAILED


def test_the_api_key_is_read_before_the_request_is_parsed() -> None:
    assert api_key_of(b"\x00\x03rest-of-a-metadata-request") == ApiKey.METADATA
    assert api_key_of(b"\x00") == -1
