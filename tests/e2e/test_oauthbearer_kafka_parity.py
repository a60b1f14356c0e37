"""SASL/OAUTHBEARER side by side with a Kafka 4.4 broker (bench/kafka-dist) configured the same way
against the same OIDC provider: the same SaslHandshake and SaslAuthenticate exchanges on both, with
a provider-granted token and with each kind of bad token, get the same answers -- error codes,
the RFC 7628 challenge bytes, the session lifetime the token's expiry sets -- and the final
failure's message starts with Kafka's (eosbroker adds the reason after it)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from storage.meta_properties import random_uuid
from tests.broker_process import REPO, BrokerProcess
from tests.e2e.oauth_setup import LOGIN_MODULE, VALIDATOR, oauth_broker, oidc
from tests.kafka_wire import RawClient, closed_by_peer
from tests.oidc_provider import AUDIENCE, OidcProvider, available

__all__ = ("oauth_broker", "oidc")  # the module's fixtures, from oauth_setup
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]

KAFKA_DIST = REPO / "bench" / "kafka-dist"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kafka_properties(oidc: OidcProvider, port: int, controller: int, internal: int, logs: Path) -> str:
    settings = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}", "controller.listener.names": "CONTROLLER",
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal},"
                     f"CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL", "log.dirs": str(logs),
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{LOGIN_MODULE} required ;",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": oidc.jwks_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE, "sasl.oauthbearer.expected.issuer": oidc.issuer,
        "sasl.oauthbearer.clock.skew.seconds": "1",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _answers(bootstrap: str) -> bool:
    try:
        with RawClient(bootstrap, timeout=2) as client:
            return int(client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
                       .error_code) == 0
    except OSError:
        return False


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory, oidc: OidcProvider) -> Iterator[str]:
    """A Kafka 4.4 broker (KRaft, one node); its SASL_PLAINTEXT bootstrap address."""
    if not list(KAFKA_DIST.glob("kafka_2.13-*.jar")):
        pytest.fail("bench/kafka-dist is missing: run `make kafka-dist`")
    work = tmp_path_factory.mktemp("kafka44")
    port, controller, internal = _free_port(), _free_port(), _free_port()
    props = work / "server.properties"
    props.write_text(_kafka_properties(oidc, port, controller, internal, work / "logs"))
    classpath = str(KAFKA_DIST / "*")
    subprocess.run(["java", "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", random_uuid(),
                    "-c", str(props)], check=True, capture_output=True)
    with (work / "kafka.log").open("wb") as log:
        allowed = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={oidc.jwks_url}"
        proc = subprocess.Popen(["java", "-Xmx384m", allowed, "-cp", classpath, "kafka.Kafka", str(props)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work)
    bootstrap = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while not _answers(bootstrap):
            assert proc.poll() is None and time.monotonic() < deadline, (work / "kafka.log").read_text()[-3000:]
            time.sleep(0.5)
        yield bootstrap
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, 9)
            proc.wait()


def _exchange(bootstrap: str, token: str, acknowledge: bool = True) -> list[Any]:
    """SaslHandshake v1 then SaslAuthenticate v2 with `token`; on a challenge, the client's \\x01.
    The answers, then whether the broker closed the connection after them."""
    with RawClient(bootstrap) as client:
        answers: list[Any] = [client.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"))]
        first = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
        answers.append(client.request(SaslAuthenticateRequest(auth_bytes=first)))
        if answers[-1].auth_bytes and acknowledge:
            answers.append(client.request(SaslAuthenticateRequest(auth_bytes=b"\x01")))
        if answers[-1].error_code:
            answers.append(closed_by_peer(client.sock))
        return answers


def _expired(oidc: OidcProvider) -> str:
    token = oidc.token("expiring")
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    while time.time() < exp + 1.5:
        time.sleep(0.25)
    return token


def _signed_elsewhere(token: str) -> str:
    """The provider's claims signed by a key of a kid the provider never published."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(jwt.decode(token, options={"verify_signature": False}), key, algorithm="RS256",
                      headers={"kid": "never-published", "typ": "at+jwt"})


BAD_TOKENS = {
    "expired": _expired,
    "wrong-audience": lambda oidc: oidc.token("alice", resource="urn:elsewhere"),
    "wrongly-signed": lambda oidc: oidc.token("alice")[:-8] + "AAAAAAAA",
    "alg-none": lambda oidc: jwt.encode(jwt.decode(oidc.token("alice"), options={"verify_signature": False}), None,
                                        algorithm="none"),
    "unknown-kid": lambda oidc: _signed_elsewhere(oidc.token("alice")),
    "malformed": lambda oidc: "abc.def",
}


def test_a_good_token_gets_the_same_answers(kafka: str, oauth_broker: BrokerProcess, oidc: OidcProvider) -> None:
    token = oidc.token("alice")
    left = jwt.decode(token, options={"verify_signature": False})["exp"] * 1000 - time.time() * 1000
    theirs, ours = _exchange(kafka, token), _exchange(oauth_broker.bootstrap_of("SASL_PLAINTEXT"), token)
    assert [a.error_code for a in theirs] == [a.error_code for a in ours] == [0, 0]
    assert theirs[0].mechanisms == ours[0].mechanisms == ("OAUTHBEARER",)
    assert theirs[1].auth_bytes == ours[1].auth_bytes == b""
    for answer in (theirs[1], ours[1]):  # the token's remaining lifetime (its expiry ends the session)
        lifetime_ms = answer.session_lifetime.total_seconds() * 1000
        assert left - 30_000 < lifetime_ms <= left, (lifetime_ms, left)


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
def test_each_bad_token_gets_the_same_answers(kafka: str, oauth_broker: BrokerProcess, oidc: OidcProvider,
                                              case: str) -> None:
    token = BAD_TOKENS[case](oidc)
    theirs, ours = _exchange(kafka, token), _exchange(oauth_broker.bootstrap_of("SASL_PLAINTEXT"), token)
    assert [a.error_code for a in theirs[:-1]] == [a.error_code for a in ours[:-1]], (theirs, ours)
    assert theirs[1].auth_bytes == ours[1].auth_bytes == b'{"status":"invalid_token"}'
    assert theirs[-1] is ours[-1] is True  # both closed the connection after the failure
    assert ours[2].error_message.startswith(theirs[2].error_message), (theirs[2], ours[2])
    print(f"{case}: Kafka says {theirs[2].error_message!r}; eosbroker says {ours[2].error_message!r}")


def test_a_bad_client_first_message_gets_the_same_answer(kafka: str, oauth_broker: BrokerProcess) -> None:
    theirs, ours = (_exchange(b, "not a token") for b in (kafka, oauth_broker.bootstrap_of("SASL_PLAINTEXT")))
    assert (theirs[1].error_code, theirs[1].error_message) == (ours[1].error_code, ours[1].error_message), \
        (theirs, ours)
    assert theirs[-1] is ours[-1] is True
