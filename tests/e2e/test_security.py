"""TLS and SASL with real clients (issue 12): confluent-kafka and kafka-python over SSL with a
client certificate, SASL_PLAINTEXT with PLAIN and SCRAM-SHA-256, SASL_SSL with PLAIN and both
SCRAMs; each way to fail (wrong password, unknown user, a mechanism the listener does not enable,
an expired or untrusted certificate, no certificate, a plaintext client on a TLS port, a request
before the SASL handshake) fails that client cleanly, with one WARNING in the broker's log (one per
peer address and kind of failure: a flood is counted, not logged line by line), while the broker
goes on serving others; connection_count is labelled with each listener and its protocol."""

from __future__ import annotations

import logging
import socket
import ssl
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.metadata.v12.request import MetadataRequest

from tests.broker_process import BrokerProcess
from tests.e2e.security_setup import CASES, confluent_config, kafka_python_config
from tests.e2e.test_metrics import Scraper
from tests.e2e.txn_clients import kafka_module, wait_until
from tests.kafka_wire import RawClient, closed_by_peer, encode_request, frame
from tests.tls_certs import TlsFiles

pytestmark = pytest.mark.e2e
kafka = kafka_module()  # kafka-python, imported with its deprecation warnings silenced


def _round_trip_confluent(config: dict[str, str], topic: str) -> list[bytes]:
    producer = Producer(config | {"enable.idempotence": True})
    for i in range(3):
        producer.produce(topic, value=b"m%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer(config | {"group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    while len(got) < 3:
        msg = consumer.poll(15)
        assert msg is not None and msg.error() is None, msg and msg.error()
        got.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    return got


@pytest.mark.parametrize("case", sorted(CASES))
def test_confluent_kafka_produces_and_consumes(secure_broker: BrokerProcess, tls_files: TlsFiles, case: str) -> None:
    config = confluent_config(secure_broker, tls_files, case)
    assert _round_trip_confluent(config, f"ck-{case}") == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_kafka_python_produces_and_consumes(secure_broker: BrokerProcess, tls_files: TlsFiles, case: str) -> None:
    config = kafka_python_config(secure_broker, tls_files, case)
    topic = f"kp-{case}"
    producer = kafka.KafkaProducer(**config)
    for i in range(3):
        producer.send(topic, value=b"m%d" % i).get(timeout=15)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                   consumer_timeout_ms=15000, **config)
    got = [next(consumer).value for _ in range(3)]
    consumer.close()
    assert got == [b"m0", b"m1", b"m2"]


def _fails(config: dict[str, str]) -> list[str]:
    """The errors a client reports when it cannot connect (its metadata request fails)."""
    errors: list[str] = []
    admin = AdminClient(config | {"error_cb": lambda e: errors.append(str(e)), "reconnect.backoff.ms": 2000,
                                  "reconnect.backoff.max.ms": 2000})
    with pytest.raises(Exception):  # noqa: B017 - librdkafka's KafkaException; the errors say why
        admin.list_topics(timeout=1)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)  # serves error_cb
    return errors


def _still_serves(broker: BrokerProcess, tls: TlsFiles) -> None:
    for case in ("ssl-mtls", "sasl_ssl-scram-sha-256"):
        topic = f"after-{uuid.uuid4().hex[:8]}"
        assert _round_trip_confluent(confluent_config(broker, tls, case), topic) == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize(("case", "change", "client_says", "broker_says"), [
    ("sasl_ssl-plain", {"sasl.password": "wrong"}, "Invalid username or password",
     "user 'alice' from 127.0.0.1:\\d+ on listener SASL_SSL failed \\(PLAIN\\): wrong password"),
    ("sasl_plaintext-plain", {"sasl.username": "mallory"}, "Invalid username or password",
     "user 'mallory' .* on listener SASL_PLAINTEXT failed \\(PLAIN\\): unknown user"),
    ("sasl_ssl-scram-sha-256", {"sasl.password": "wrong"}, "invalid credentials with SASL mechanism SCRAM-SHA-256",
     "user 'bob' .* failed \\(SCRAM-SHA-256\\): wrong password"),
    ("sasl_ssl-scram-sha-512", {"sasl.username": "bob"}, "invalid credentials with SASL mechanism SCRAM-SHA-512",
     "user 'bob' .* failed \\(SCRAM-SHA-512\\): unknown user"),
    ("sasl_plaintext-plain", {"sasl.mechanism": "SCRAM-SHA-512"}, "SCRAM-SHA-512",
     "on listener SASL_PLAINTEXT failed .*mechanism 'SCRAM-SHA-512' is not enabled "
     "\\(enabled: PLAIN, SCRAM-SHA-256\\)"),
    ("ssl-mtls", {"ssl.certificate.location": "expired_cert", "ssl.key.location": "expired_key"}, "",
     "TLS handshake with 127.0.0.1:\\d+ on listener SSL failed: .*certificate has expired"),
    ("ssl-mtls", {"ssl.certificate.location": "untrusted_cert", "ssl.key.location": "untrusted_key"}, "",
     "TLS handshake .* on listener SSL failed: .*unable to get local issuer certificate"),
    ("ssl-mtls", {"ssl.certificate.location": None, "ssl.key.location": None}, "",
     "TLS handshake .* on listener SSL failed: .*PEER_DID_NOT_RETURN_A_CERTIFICATE"),
    ("ssl-mtls", {"security.protocol": "PLAINTEXT"}, "",
     "on listener SSL failed: .*not a TLS client \\(a PLAINTEXT client on a TLS listener\\?\\)"),
])
def test_each_failure_is_clean_and_the_broker_keeps_serving(
        secure_broker: BrokerProcess, tls_files: TlsFiles, case: str, change: dict[str, str | None],
        client_says: str, broker_says: str) -> None:
    config = confluent_config(secure_broker, tls_files, case)
    for key, value in change.items():
        if value is None:
            config.pop(key)
        else:
            config[key] = str(getattr(tls_files, value)) if hasattr(tls_files, value) else value
    before = len(secure_broker.log_lines)
    errors = _fails(config)
    assert any(client_says in e for e in errors), errors
    assert secure_broker.wait_for_log(f"WARNING broker.security: .*{broker_says}", before), \
        "".join(secure_broker.log_lines[before:])[-3000:]
    assert not any("password" in line and ("wrong\"" in line or "-secret" in line)
                   for line in secure_broker.log_lines)  # never a password in the log
    _still_serves(secure_broker, tls_files)


@pytest.mark.parametrize(("case", "change", "client_says"), [
    ("sasl_ssl-plain", {"sasl_plain_password": "wrong"}, "Authentication failed: Invalid username or password"),
    ("sasl_plaintext-scram-sha-256", {"sasl_plain_username": "mallory"},
     "invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("sasl_plaintext-plain", {"sasl_mechanism": "SCRAM-SHA-512"}, "UnsupportedSaslMechanismError"),
    # TLS: the broker's alert says why
    ("ssl-mtls", {"ssl_certfile": "expired_cert", "ssl_keyfile": "expired_key"}, "ALERT_CERTIFICATE_EXPIRED"),
    ("ssl-mtls", {"ssl_certfile": "untrusted_cert", "ssl_keyfile": "untrusted_key"}, "ALERT_UNKNOWN_CA"),
    ("ssl-mtls", {"security_protocol": "PLAINTEXT"}, "socket disconnected"),  # a TLS alert is no Kafka answer
])
def test_kafka_python_failures_are_clean_and_the_broker_keeps_serving(
        secure_broker: BrokerProcess, tls_files: TlsFiles, caplog: pytest.LogCaptureFixture, case: str,
        change: dict[str, str], client_says: str) -> None:
    config = kafka_python_config(secure_broker, tls_files, case)
    config |= {key: str(getattr(tls_files, value)) if hasattr(tls_files, value) else value
               for key, value in change.items()}
    admin = kafka.KafkaAdminClient.__new__(kafka.KafkaAdminClient)
    try:
        with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(kafka.errors.KafkaTimeoutError):
            admin.__init__(**config, bootstrap_timeout_ms=2500)  # it retries until then, each time refused
    finally:
        # kafka-python 3.0 raises from __init__ with its IO thread still running: it went on reconnecting
        # for the rest of the session, and a socket it dropped failed whatever test was running when the
        # garbage collector found it (ResourceWarning). Built in two steps so that it can be closed.
        if hasattr(admin, "_net"):
            admin._closed = False
            admin.close()
    assert any(client_says in record.getMessage() for record in caplog.records), \
        [record.getMessage() for record in caplog.records][-10:]
    _still_serves(secure_broker, tls_files)


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"])
@pytest.mark.parametrize(("cert", "alert"), [("expired", "ALERT_CERTIFICATE_EXPIRED"),
                                             ("untrusted", "ALERT_UNKNOWN_CA")])
def test_a_refused_client_certificate_gets_the_tls_alert_saying_why(
        secure_broker: BrokerProcess, tls_files: TlsFiles, version: ssl.TLSVersion, cert: str, alert: str) -> None:
    """Not just a closed connection: under TLS 1.3 the client has finished its handshake before the
    broker checks its certificate, and only the alert tells it not to retry (Java's client throws
    SslAuthenticationException on it)."""
    context = ssl.create_default_context(cafile=str(tls_files.ca))
    context.minimum_version = context.maximum_version = version
    context.load_cert_chain(str(getattr(tls_files, f"{cert}_cert")), str(getattr(tls_files, f"{cert}_key")))
    port = secure_broker.listener_ports["SSL"]
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock, pytest.raises(ssl.SSLError) as caught:
        with context.wrap_socket(sock, server_hostname="localhost") as tls:
            tls.recv(1)  # TLS 1.3: the alert comes after the client's side of the handshake
    assert alert in str(caught.value)


def test_a_request_before_the_sasl_handshake_closes_the_connection(secure_broker: BrokerProcess) -> None:
    before = len(secure_broker.log_lines)
    with RawClient(secure_broker.bootstrap_of("SASL_PLAINTEXT")) as client:
        client.send_raw(frame(encode_request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                             include_topic_authorized_operations=False), 1)))
        assert closed_by_peer(client.sock)
    assert secure_broker.wait_for_log("METADATA request on SASL listener SASL_PLAINTEXT before authentication "
                                      "\\(state HANDSHAKE_OR_VERSIONS\\); a client must send SaslHandshake first",
                                      before)


def test_a_flood_of_bad_clients_is_one_warning_per_address(secure_broker: BrokerProcess,
                                                           tls_files: TlsFiles) -> None:
    """Fifty plaintext clients on the SASL_SSL port: the first is logged, the rest only counted
    (their summary comes when the minute is over: tests/broker/security/test_failure_log.py)."""
    before = len(secure_broker.log_lines)
    for _ in range(50):
        with RawClient(secure_broker.bootstrap_of("SASL_SSL")) as client:
            client.send_raw(frame(encode_request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                                 include_topic_authorized_operations=False), 1)))
            assert closed_by_peer(client.sock)
    marker = f"flood-{uuid.uuid4().hex[:8]}"  # a line logged after every failure above
    admin = AdminClient(confluent_config(secure_broker, tls_files, "ssl-mtls"))
    admin.create_topics([NewTopic(marker, 1, 1)])[marker].result(30)
    assert secure_broker.wait_for_log(f"created topic {marker}", before)
    warned = [line for line in secure_broker.log_lines[before:] if "on listener SASL_SSL failed" in line]
    assert len(warned) == 1 and "not a TLS client" in warned[0], warned


def test_connection_count_is_per_listener_with_its_security_protocol(secure_broker: BrokerProcess,
                                                                      tls_files: TlsFiles) -> None:
    scraper = Scraper(secure_broker)
    name = "kafka_server_socket_server_metrics_connection_count"

    def count(listener: str) -> float:
        return scraper.value(name, listener=listener, security_protocol=listener, networkprocessor="0")

    before = {listener: count(listener) for listener in ("SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    admins = [AdminClient(confluent_config(secure_broker, tls_files, case))
              for case in ("ssl-mtls", "sasl_plaintext-plain", "sasl_ssl-scram-sha-512")]
    for admin in admins:
        admin.list_topics(timeout=30)  # connected and authenticated
    # librdkafka moves from its bootstrap connection to the broker's advertised one: wait for it
    wait_until(lambda: all(count(listener) >= was + 1 for listener, was in before.items()),
               f"a connection counted on each listener (before: {before})")
    assert {labels for (metric, labels) in scraper.samples() if metric == name} == {
        frozenset({("listener", listener), ("security_protocol", listener), ("networkprocessor", "0")})
        for listener in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}


def test_librdkafka_reauthenticates_within_connections_max_reauth_ms(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """KIP-368: the session lifetime SaslAuthenticate gives makes the client re-authenticate on
    the same connection; nothing is closed for an expired session and every record arrives."""
    broker = broker_factory({
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
        "connections.max.reauth.ms": "1000"})
    reauths: list[str] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap_of("SASL_PLAINTEXT"), "security.protocol":
                         "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
                         "sasl.password": "alice-secret", "debug": "security",
                         "logger": _Collect(reauths)})
    sent = 0
    while sum("state REAUTH" in line for line in reauths) < 2:  # two re-authentications of a connection
        producer.produce("reauth", value=b"%d" % sent)
        sent += 1
        assert producer.flush(10) == 0
        producer.poll(0.1)  # pacing: a few records per session, not thousands
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "r", "auto.offset.reset": "earliest"})
    consumer.subscribe(["reauth"])
    got = [consumer.poll(10) for _ in range(sent)]
    consumer.close()
    assert [m.value() for m in got if m is not None] == [b"%d" % i for i in range(sent)]
    assert not broker.logged("expired")


class _Collect:
    """A logging.Logger stand-in for librdkafka's log lines."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def log(self, _level: int, fmt: str, *args: object) -> None:
        self.lines.append(fmt % args)
