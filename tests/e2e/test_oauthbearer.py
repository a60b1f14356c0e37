"""SASL/OAUTHBEARER against a real OpenID Connect provider (issue 36): clients log in with tokens the
provider grants by client credentials, the broker checks them against the provider's JWKS, and the
token's subject is the principal the ACLs are granted to. librdkafka (confluent-kafka,
sasl.oauthbearer.method=oidc) and kafka-python (a token provider that asks the provider) produce
transactionally and read at read_committed with their grants, and are refused without them; a
token that expires mid-session is replaced by re-authentication; each bad token fails its login
with Kafka's answer and the reason, and the broker's log never holds a token."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory
from tests.e2e.oauth_setup import broker_settings, new_topic, oauth_broker, oidc
from tests.e2e.txn_clients import kafka_module
from tests.kafka_wire import RawClient, closed_by_peer, encode_request, frame
from tests.oidc_provider import CLIENTS, OidcProvider, available
from tests.tls_certs import TlsFiles

__all__ = ("oauth_broker", "oidc")  # the module's fixtures, from oauth_setup
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]
kafka = kafka_module()


def _confluent(broker: BrokerProcess, oidc: OidcProvider, client: str, listener: str = "SASL_PLAINTEXT",
               ) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_of(listener), "security.protocol": listener,
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": client, "sasl.oauthbearer.client.secret": CLIENTS[client][0],
            "sasl.oauthbearer.token.endpoint.url": oidc.token_url, "sasl.oauthbearer.scope": "kafka"}


def _confluent_round_trip(config: dict[str, Any], topic: str, count: int = 3) -> list[bytes]:
    producer = Producer(config | {"transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, value=b"m%d" % i)
    producer.commit_transaction(30)
    consumer = Consumer(config | {"group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                                  "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    while len(got) < count:
        msg = consumer.poll(15)
        assert msg is not None and msg.error() is None, msg and msg.error()
        got.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    return got


def test_librdkafka_oidc_client_credentials_under_acls(oauth_broker: BrokerProcess, oidc: OidcProvider) -> None:
    topic = new_topic(oauth_broker, "User:alice")
    assert _confluent_round_trip(_confluent(oauth_broker, oidc, "alice"), topic) == [b"m0", b"m1", b"m2"]
    # The same grants, another subject: refused by the ACLs, not by authentication.
    producer = Producer(_confluent(oauth_broker, oidc, "nobody") | {"transactional.id": f"tx-{topic}"})
    with pytest.raises(KafkaException) as caught:
        producer.init_transactions(30)
    assert caught.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def _kafka_python_provider(get_token: Any) -> Any:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Tokens(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            return str(get_token())

    return Tokens()


def _kafka_python(broker: BrokerProcess, get_token: Any) -> dict[str, Any]:
    return {"bootstrap_servers": broker.bootstrap_of("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _kafka_python_provider(get_token)}


def test_kafka_python_with_a_token_provider_under_acls(oauth_broker: BrokerProcess, oidc: OidcProvider) -> None:
    topic = new_topic(oauth_broker, "User:bob")
    config = _kafka_python(oauth_broker, lambda: oidc.token("bob"))
    producer = kafka.KafkaProducer(**config, transactional_id=f"tx-{topic}")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.send(topic, b"k%d" % i)
    producer.commit_transaction()
    producer.close()
    consumer = kafka.KafkaConsumer(topic, **config, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                   isolation_level="read_committed", consumer_timeout_ms=15000)
    got = [next(consumer).value for _ in range(3)]
    consumer.close()
    assert got == [b"k0", b"k1", b"k2"]
    refused = kafka.KafkaProducer(**_kafka_python(oauth_broker, lambda: oidc.token("nobody")),
                                  transactional_id=f"tx-{topic}")
    with pytest.raises(kafka.errors.TransactionalIdAuthorizationFailedError):
        refused.init_transactions()
    refused.close()


def test_an_expiring_token_is_replaced_by_reauthentication(oauth_broker: BrokerProcess, oidc: OidcProvider) -> None:
    """The provider grants `shortlived` 8 s tokens: SaslAuthenticate gives that as the session
    lifetime, librdkafka fetches a new token and re-authenticates on the same connection, and
    records keep flowing across several token lifetimes."""
    topic = new_topic(oauth_broker, "User:shortlived")
    lines: list[str] = []
    config = _confluent(oauth_broker, oidc, "shortlived") | {"debug": "security", "logger": _Collect(lines)}
    producer = Producer(config | {"enable.idempotence": True})
    sent = 0
    while sum("state REAUTH" in line for line in lines) < 2:  # two re-authentications of a connection
        producer.produce(topic, value=b"%d" % sent)
        sent += 1
        assert producer.flush(10) == 0
        producer.poll(0.25)
    consumer = Consumer(config | {"group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                                  "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    got = [consumer.poll(10) for _ in range(sent)]
    consumer.close()
    assert [m.value() for m in got if m is not None] == [b"%d" % i for i in range(sent)]
    assert not oauth_broker.logged("SASL session of User:shortlived expired")
    assert not oauth_broker.logged("Cannot change principals")


class _Collect:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def log(self, _level: int, fmt: str, *args: object) -> None:
        self.lines.append(fmt % args)


def _kafka_python_refused(broker: BrokerProcess, token: str, caplog: pytest.LogCaptureFixture) -> list[str]:
    """What kafka-python logs when its login with `token` is refused."""
    admin = kafka.KafkaAdminClient.__new__(kafka.KafkaAdminClient)
    try:
        with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(kafka.errors.KafkaTimeoutError):
            admin.__init__(**_kafka_python(broker, lambda: token), bootstrap_timeout_ms=2500)
    finally:
        if hasattr(admin, "_net"):  # see tests/e2e/test_security.py: closed, or it reconnects forever
            admin._closed = False
            admin.close()
    return [record.getMessage() for record in caplog.records]


def _expired(oidc: OidcProvider) -> str:
    token = oidc.token("expiring")  # a 2 s token; the broker allows 1 s of clock skew
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    while time.time() < exp + 1.5:
        time.sleep(0.25)
    return token


def _unsigned(oidc: OidcProvider) -> str:
    claims = jwt.decode(oidc.token("alice"), options={"verify_signature": False})
    return jwt.encode(claims, None, algorithm="none")  # deliberately bad: the provider's claims, no signature


@pytest.mark.parametrize(("bad", "reason"), [
    (_expired, "Could not validate the access token: the token has expired"),
    (lambda oidc: oidc.token("alice", resource="urn:elsewhere"),
     "audience \\(aud\\) claim doesn't contain an acceptable identifier"),
    (lambda oidc: "not-a-jwt", "Malformed JWT provided; expected three sections"),
    (_unsigned, 'Malformed JWT provided: the JWS algorithm "none" is not permitted'),
    (lambda oidc: oidc.token("alice")[:-8] + "AAAAAAAA", "the signature does not verify"),
], ids=["expired", "wrong-audience", "malformed", "alg-none", "wrongly-signed"])
def test_each_bad_token_fails_with_the_reason_and_never_reaches_the_log(
        oauth_broker: BrokerProcess, oidc: OidcProvider, caplog: pytest.LogCaptureFixture, bad: Any,
        reason: str) -> None:
    token = bad(oidc)
    before = len(oauth_broker.log_lines)
    said = _kafka_python_refused(oauth_broker, token, caplog)
    assert any('{"status":"invalid_token"} (' in line and _search(reason, line) for line in said), said[-5:]
    assert oauth_broker.wait_for_log(f"WARNING broker.security: SASL authentication of a client from "
                                     f"127.0.0.1:\\d+ on listener SASL_PLAINTEXT failed \\(OAUTHBEARER\\): .*{reason}",
                                     before), "".join(oauth_broker.log_lines[before:])[-3000:]
    _no_token_logged(oauth_broker, token)
    topic = new_topic(oauth_broker, "User:alice")  # and the broker goes on serving good tokens
    assert _confluent_round_trip(_confluent(oauth_broker, oidc, "alice"), topic) == [b"m0", b"m1", b"m2"]


def _search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


def _no_token_logged(broker: BrokerProcess, token: str) -> None:
    pieces = [p for p in token.split(".") if len(p) > 16]  # nor any of its sections
    assert not any(piece in line for line in broker.log_lines for piece in [token, *pieces])


def _librdkafka_with(broker: BrokerProcess, token: str, errors: list[str]) -> AdminClient:
    """librdkafka logging in with `token` (its oauth_cb), its errors and log lines collected."""
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    return AdminClient({"bootstrap.servers": broker.bootstrap_of("SASL_PLAINTEXT"),
                        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                        "error_cb": lambda e: errors.append(str(e)), "logger": _Collect(errors),
                        "oauth_cb": lambda _: (token, exp, "alice")})


def test_librdkafka_sees_the_reason_too(oauth_broker: BrokerProcess, oidc: OidcProvider) -> None:
    """A provider-granted token for another resource (librdkafka's oidc login cannot ask for
    one, so an oauth_cb hands it over): its audience is refused."""
    errors: list[str] = []
    token = oidc.token("alice", resource="urn:elsewhere")
    admin = _librdkafka_with(oauth_broker, token, errors)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    deadline = time.monotonic() + 10
    while not any("invalid_token" in e for e in errors) and time.monotonic() < deadline:
        admin.poll(0.2)
    assert any("audience (aud) claim doesn't contain an acceptable identifier" in e for e in errors), errors
    _no_token_logged(oauth_broker, token)


def test_a_wrong_issuer_is_refused(broker_factory: BrokerFactory, oidc: OidcProvider,
                                   caplog: pytest.LogCaptureFixture) -> None:
    broker = broker_factory(broker_settings(oidc, **{"sasl.oauthbearer.expected.issuer": "https://idp.example"}))
    token = oidc.token("alice")
    said = _kafka_python_refused(broker, token, caplog)
    assert any("issuer (iss) claim is not the expected issuer https://idp.example" in line for line in said), said
    _no_token_logged(broker, token)


def test_a_rotated_signing_key_is_fetched_on_its_first_use(broker_factory: BrokerFactory, tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """The provider restarts with a new key: the broker, whose JWKS is an hour old, refuses the
    first token signed with it (unknown kid) and fetches the JWKS at once; the retry logs in, and
    tokens of the old key no longer do."""
    oidc = OidcProvider(tmp_path / "provider.log").start()
    try:
        broker = broker_factory(broker_settings(oidc))
        topic = new_topic(broker, "User:alice")
        old_token = oidc.token("alice")
        assert _confluent_round_trip(_confluent(broker, oidc, "alice"), topic) == [b"m0", b"m1", b"m2"]
        old_kid, new_kid = oidc.kid, oidc.rotate()
        new_token, errors = oidc.token("alice"), []
        admin = _librdkafka_with(broker, new_token, errors)
        assert topic in admin.list_topics(timeout=30).topics  # after one refused login and a reconnect
        for _ in range(20):  # the log lines come through poll()
            if errors:
                break
            admin.poll(0.25)
        assert any("Unable to find a suitable verification key" in e and new_kid in e for e in errors), errors
        assert broker.logged(f"JWKS from {oidc.jwks_url}: key ids {new_kid}")
        topic = new_topic(broker, "User:alice")
        assert _confluent_round_trip(_confluent(broker, oidc, "alice"), topic) == [b"m0", b"m1", b"m2"]
        caplog.clear()
        said = _kafka_python_refused(broker, old_token, caplog)
        assert any("Unable to find a suitable verification key" in line and old_kid in line for line in said), said
    finally:
        oidc.stop()


def test_a_broker_whose_jwks_cannot_be_had_does_not_start(tmp_path: Path) -> None:
    """As Kafka's validator: the keys are fetched (with the retry back-off) before serving."""
    from tests.e2e.test_startup import refused

    settings = broker_settings(OidcProvider(tmp_path / "unused.log", issuer="http://127.0.0.1:1"),
                               **{"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "300"})
    settings["authorizer.class.name"] = ""
    line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data"),
                   *(arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")))
    assert line == ("eosbroker: listener SASL_PLAINTEXT: could not fetch the JWKS from http://127.0.0.1:1/jwks: "
                    "<urlopen error [Errno 111] Connection refused>"), line


def test_the_broker_keeps_its_keys_while_the_provider_is_down(broker_factory: BrokerFactory, tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """An unknown kid while the provider cannot be reached: that login fails, the refresh fails
    with a WARNING, and tokens of the keys the broker has keep working."""
    oidc = OidcProvider(tmp_path / "provider.log").start()
    try:
        broker = broker_factory(broker_settings(oidc))
        token = oidc.token("alice")
        old_kid = oidc.kid
        oidc.rotate()
        stranger = oidc.token("alice")
    finally:
        oidc.stop()
    said = _kafka_python_refused(broker, stranger, caplog)
    assert any("Unable to find a suitable verification key" in line for line in said), said
    assert broker.wait_for_log(f"WARNING broker.security: JWKS refresh for an unknown key id failed: could not "
                               f"fetch the JWKS from {oidc.jwks_url}") is not None
    errors: list[str] = []
    admin = _librdkafka_with(broker, token, errors)  # signed with the key the broker has: still served
    assert len(admin.list_topics(timeout=30).brokers) == 1
    assert not any("invalid_token" in e or old_kid in e for e in errors), errors


def test_https_provider_trusted_through_the_jaas_options_on_a_sasl_ssl_listener(
        broker_factory: BrokerFactory, tmp_path: Path, tls_files: TlsFiles) -> None:
    """The provider serves HTTPS with a certificate of the test CA: the broker trusts it through its
    OAUTHBEARER JAAS config's ssl.truststore.* options (as Kafka's JaasOptionsUtils), librdkafka
    through https.ca.location, and the client listener is SASL_SSL. Without the trust store the
    broker does not start: the JWKS cannot be fetched."""
    from tests.e2e.test_startup import refused

    oidc = OidcProvider(tmp_path / "provider.log", tls_pem=tls_files.server_keystore_unencrypted,
                        tls_ca=tls_files.ca).start()
    try:
        assert oidc.jwks_url.startswith("https://")
        trust = f'ssl.truststore.type="PEM" ssl.truststore.location="{tls_files.ca}" '
        broker = broker_factory(broker_settings(oidc, "SASL_SSL", trust) | tls_files.broker_settings())
        topic = new_topic(broker, "User:erin")
        config = _confluent(broker, oidc, "erin", "SASL_SSL") | {"ssl.ca.location": str(tls_files.ca),
                                                                 "https.ca.location": str(tls_files.ca)}
        assert _confluent_round_trip(config, topic) == [b"m0", b"m1", b"m2"]
        untrusting = broker_settings(oidc, "SASL_SSL") | tls_files.broker_settings()
        untrusting["authorizer.class.name"] = ""
        line = refused(tmp_path, "--port", "0", "--data-dir", str(tmp_path / "data2"),
                       *(arg for key, value in untrusting.items() for arg in ("--set", f"{key}={value}")))
        assert f"could not fetch the JWKS from {oidc.jwks_url}" in line and "CERTIFICATE_VERIFY_FAILED" in line, line
    finally:
        oidc.stop()


def test_kafka_python_reauthenticates_with_fresh_tokens(oauth_broker: BrokerProcess, oidc: OidcProvider) -> None:
    """kafka-python 3 re-authenticates too (KIP-368): a producer that outlives two of its 8 s
    tokens asks its provider for new ones, no session is ended for an expired token, and every
    record arrives."""
    topic = new_topic(oauth_broker, "User:shortlived")
    tokens: list[str] = []

    def fresh() -> str:
        tokens.append(oidc.token("shortlived"))
        return tokens[-1]

    before = len(oauth_broker.log_lines)
    producer = kafka.KafkaProducer(**_kafka_python(oauth_broker, fresh), enable_idempotence=True)
    sent, until = 0, time.monotonic() + 20  # two and a half token lifetimes
    while time.monotonic() < until:
        producer.send(topic, b"%d" % sent).get(timeout=30)
        sent += 1
        time.sleep(0.25)
    producer.close()
    assert len(set(tokens)) >= 3
    assert not any("SASL session of User:shortlived expired" in line for line in oauth_broker.log_lines[before:])
    consumer = kafka.KafkaConsumer(topic, **_kafka_python(oauth_broker, fresh), auto_offset_reset="earliest",
                                   consumer_timeout_ms=15000)
    got = [next(consumer).value for _ in range(sent)]
    consumer.close()
    assert got == [b"%d" % i for i in range(sent)]


METADATA = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def test_a_session_ends_with_its_token_without_reauthentication(oauth_broker: BrokerProcess,
                                                                  oidc: OidcProvider) -> None:
    """A client that does not re-authenticate: SaslAuthenticate gave it the token's remaining
    lifetime (connections.max.reauth.ms is 0), and its first request after that closes the
    connection."""
    token = oidc.token("expiring")  # 2 s
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    with RawClient(oauth_broker.bootstrap_of("SASL_PLAINTEXT")) as client:
        client.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"))
        answer = client.request(SaslAuthenticateRequest(auth_bytes=f"n,,\x01auth=Bearer {token}\x01\x01".encode()))
        assert (answer.error_code, answer.auth_bytes) == (0, b"")
        assert 0 < answer.session_lifetime.total_seconds() <= 2
        client.request(METADATA)  # within the session
        while time.time() < exp + 0.5:
            time.sleep(0.1)
        client.send_raw(frame(encode_request(METADATA, 9)))
        assert closed_by_peer(client.sock)
    assert oauth_broker.wait_for_log("METADATA request after the SASL session of User:expiring expired")


def test_without_the_validator_class_kafkas_unsecured_validator_serves(broker_factory: BrokerFactory) -> None:
    """Development only, as in Kafka: no sasl.server.callback.handler.class, so unsigned tokens
    are taken (librdkafka makes one with enable.sasl.oauthbearer.unsecure.jwt) and their subject is
    the principal; the broker says at start-up that anyone can make such a token."""
    broker = broker_factory({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredValidatorRequiredScope="kafka";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS"})
    assert broker.logged("unsigned tokens that anyone can make are accepted; for development only")
    topic = new_topic(broker, "User:dev")
    config = {"bootstrap.servers": broker.bootstrap_of("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True}
    assert _confluent_round_trip(config | {"sasl.oauthbearer.config": "principal=dev scope=kafka"},
                                 topic) == [b"m0", b"m1", b"m2"]
    errors: list[str] = []
    admin = AdminClient(config | {"sasl.oauthbearer.config": "principal=dev scope=other",
                                  "error_cb": lambda e: errors.append(str(e))})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)
    assert any("missing required scope values: kafka" in e for e in errors), errors
