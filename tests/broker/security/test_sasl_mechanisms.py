"""The SASL pieces without a broker: JAAS parsing as Kafka's JaasConfig, PLAIN as PlainSaslServer,
SCRAM against RFC 7677's example and a client written from RFC 5802, SSL principal mapping rules."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import pytest

from broker.security.jaas import JaasError, parse_jaas_config
from broker.security.plain import PlainServer, plain_users
from broker.security.sasl_errors import AuthenticationFailed
from broker.security.scram import MECHANISMS, ScramServer, credential_from_salted_password, salted_password
from broker.security.ssl_principal import NoMatchingRule, SslPrincipalMapper

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_jaas_config_forms_kafka_accepts() -> None:
    text = (f"{PLAIN} required username=\"admin\" password='admin secret'\n"
            "  user_admin=\"admin secret\" /* a comment */ user_alice=alice-1 // another\n ;"
            " org.apache.kafka.common.security.scram.ScramLoginModule OPTIONAL username=\"x\\\"y\";")
    first, second = parse_jaas_config(text)
    assert (first.login_module, first.control_flag) == (PLAIN, "REQUIRED")
    assert first.options == {"username": "admin", "password": "admin secret", "user_admin": "admin secret",
                             "user_alice": "alice-1"}
    assert second.control_flag == "OPTIONAL" and second.options == {"username": 'x"y'}
    assert plain_users([first, second]) == {"admin": "admin secret", "alice": "alice-1"}


@pytest.mark.parametrize(("text", "message"), [
    ("", "Login module not specified"),
    (f"{PLAIN}", "control flag not specified"),
    (f"{PLAIN} mandatory;", "Invalid login module control flag 'mandatory'"),
    (f"{PLAIN} required user_a=;", "Value not specified for key 'user_a'"),
    (f"{PLAIN} required user_a=123;", "Value not specified for key 'user_a'"),  # numbers must be quoted
    (f'{PLAIN} required user_a="secret"', "not terminated by semi-colon"),
])
def test_bad_jaas_configs_are_refused_without_echoing_values(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=message) as caught:
        parse_jaas_config(text)
    assert "secret" not in str(caught.value)


def _plain(token: bytes, users: dict[str, str] | None = None) -> PlainServer:
    server = PlainServer(users or {"alice": "alice-secret"})
    server.evaluate(token)
    return server


def test_plain_accepts_the_right_password_and_an_equal_authzid() -> None:
    assert _plain(b"\0alice\0alice-secret").authorization_id == "alice"
    assert _plain(b"alice\0alice\0alice-secret").complete


@pytest.mark.parametrize(("token", "message", "detail"), [
    (b"\0alice\0wrong", "Invalid username or password", "wrong password"),
    (b"\0mallory\0alice-secret", "Invalid username or password", "unknown user"),
    (b"bob\0alice\0alice-secret", "authorization id that is different", None),
    (b"\0\0x", "username not specified", None),
    (b"\0alice\0", "password not specified", None),
    (b"alice", "expected 3 tokens, got 1", None),
])
def test_plain_failures_as_kafka_words_them(token: bytes, message: str, detail: str | None) -> None:
    with pytest.raises(AuthenticationFailed, match=message) as caught:
        _plain(token)
    assert detail is None or caught.value.detail == detail
    assert "secret" not in caught.value.client_message


def _credential(mechanism: str, password: str, iterations: int = 4096):  # type: ignore[no-untyped-def]
    mech = MECHANISMS[mechanism]
    salt = secrets.token_bytes(16)
    return credential_from_salted_password(mech, salted_password(mech, password, salt, iterations), salt, iterations)


def test_scram_sha_256_matches_rfc_7677(monkeypatch: pytest.MonkeyPatch) -> None:
    mech = MECHANISMS["SCRAM-SHA-256"]
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = credential_from_salted_password(mech, salted_password(mech, "pencil", salt, 4096), salt, 4096)
    monkeypatch.setattr(secrets, "token_urlsafe", lambda _n: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server = ScramServer(mech, lambda user, _m: credential if user == "user" else None)
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


def _client_final(mechanism: str, password: str, first_bare: str, server_first: str) -> tuple[str, bytes]:
    mech = MECHANISMS[mechanism]
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(mech.hash_name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", mech.hash_name).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(mech.h(client_key), auth, mech.hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.new(salted, b"Server Key", mech.hash_name).digest()
    expected = b"v=" + base64.b64encode(hmac.new(server_key, auth, mech.hash_name).digest())
    return f"{without_proof},p={base64.b64encode(proof).decode()}", expected


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_server_signature(mechanism: str) -> None:
    credential = _credential(mechanism, "s3cret")
    server = ScramServer(MECHANISMS[mechanism], lambda user, m: credential if (user, m) == ("a,b=c", mechanism)
                         else None)
    first_bare = "n=a=2Cb=3Dc,r=clientnonce"
    server_first = server.evaluate(f"n,,{first_bare}".encode()).decode()
    final, expected = _client_final(mechanism, "s3cret", first_bare, server_first)
    assert server.evaluate(final.encode()) == expected
    assert server.authorization_id == "a,b=c"


@pytest.mark.parametrize(("first", "password", "detail"), [
    ("n,,n=alice,r=abc", "wrong", "wrong password"),
    ("n,,n=nobody,r=abc", "s3cret", "unknown user"),
    ("p=tls-unique,,n=alice,r=abc", "s3cret", "channel binding is not supported"),
    ("n,,n=alice,r=abc,tokenauth=true", "s3cret", "delegation tokens"),
])
def test_scram_failures_tell_the_client_nothing_more(first: str, password: str, detail: str) -> None:
    credential = _credential("SCRAM-SHA-256", "s3cret")
    server = ScramServer(MECHANISMS["SCRAM-SHA-256"], lambda user, _m: credential if user == "alice" else None)
    with pytest.raises(AuthenticationFailed) as caught:
        server_first = server.evaluate(first.encode()).decode()
        final, _ = _client_final("SCRAM-SHA-256", password, first[3:], server_first)
        server.evaluate(final.encode())
    assert detail in caught.value.detail
    assert caught.value.client_message == ("Authentication failed during authentication due to invalid credentials "
                                           "with SASL mechanism SCRAM-SHA-256")


def test_scram_refuses_a_forged_nonce() -> None:
    credential = _credential("SCRAM-SHA-256", "s3cret")
    server = ScramServer(MECHANISMS["SCRAM-SHA-256"], lambda _u, _m: credential)
    server.evaluate(b"n,,n=alice,r=abc")
    with pytest.raises(AuthenticationFailed) as caught:
        server.evaluate(b"c=biws,r=abcother,p=AAAA")
    assert "Invalid client nonce" in caught.value.detail


def test_ssl_principal_mapping_rules_as_kafka() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*),O=Acme.*$/$1@acme/U, "
                                "DEFAULT")
    assert mapper.name("CN=Kafka-Svc,OU=ServiceUsers,O=Acme") == "kafka-svc"
    assert mapper.name("CN=bob,O=Acme,C=GB") == "BOB@ACME"
    assert mapper.name("CN=carol,O=Other") == "CN=carol,O=Other"
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=Acme")
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper("RULE:missing-slashes")
