"""SASL/OAUTHBEARER's pure parts: the client's first message, the token checks of both validators,
the JWKS cache's refresh rule, the two-step failure and the listener's settings. The tokens here are
signed by keys the tests make, as a provider would; tests/e2e/test_oauthbearer*.py use a real one."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from broker.config import ConfigError, build_config
from broker.security.jwks import MISSING_KID_ENTRIES, JwksCache, JwksError, parse_jwks
from broker.security.oauth_tokens import BrokerJwtValidator, InvalidToken, UnsecuredJwtValidator
from broker.security.oauthbearer import OAuthBearerServer, oauth_validator, parse_client_first
from broker.security.sasl_errors import AuthenticationFailed
from broker.security.settings import ListenerSettings

ISSUER = "https://idp.test"
AUDIENCE = "urn:eosbroker"


class _Provider:
    """Signing keys and their JWKS document, as an identity provider publishes them."""

    def __init__(self, *kids: str) -> None:
        self.keys = {kid: rsa.generate_private_key(public_exponent=65537, key_size=2048) for kid in kids}

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key in self.keys.items():
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            keys.append(jwk | {"kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def token(self, kid: str, typ: str = "at+jwt", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300, "scope": "kafka"}
        body |= claims
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid, "typ": typ})


def _cache(provider: _Provider, fetches: list[str] | None = None) -> JwksCache:
    def fetch(url: str) -> dict[str, Any]:
        if fetches is not None:
            fetches.append(url)
        return provider.jwks()

    return JwksCache("https://idp.test/jwks", 3_600_000, 100, 10_000, fetch=fetch)


def _validator(cache: JwksCache, skew: int = 30) -> BrokerJwtValidator:
    return BrokerJwtValidator(cache, audiences=(AUDIENCE, "urn:other"), issuer=ISSUER, clock_skew_s=skew,
                              sub_claim="sub", scope_claim="scope")


def test_client_first_message_as_kafka_parses_it() -> None:
    first = parse_client_first(b"n,a=alice=2Cx,\x01auth=Bearer abc.def-_.ghi\x01traceId=42\x01\x01")
    assert (first.authorization_id, first.token, first.extensions) == ("alice,x", "abc.def-_.ghi", {"traceId": "42"})
    assert parse_client_first(b"n,,\x01auth=bearer t0k=\x01\x01").token == "t0k="
    assert "t0k" not in repr(parse_client_first(b"n,,\x01auth=Bearer t0k\x01\x01"))


@pytest.mark.parametrize(("message", "error"), [
    (b"y,,\x01auth=Bearer t\x01\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01auth=Bearer t\x01", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01other=1\x01\x01", "Invalid OAUTHBEARER client first message: 'auth' not specified"),
    (b"n,,\x01auth=Bearer a b\x01\x01", "Invalid OAUTHBEARER client first message: invalid 'auth' format"),
    (b"n,,\x01auth=Basic abc\x01\x01", "Invalid scheme in OAUTHBEARER client first message: Basic"),
])
def test_bad_client_first_messages(message: bytes, error: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_client_first(message)
    assert str(caught.value) == error


async def test_a_signed_token_gives_its_subject_and_expiry() -> None:
    provider = _Provider("k1")
    cache = _cache(provider)
    await cache.refresh()
    token = provider.token("k1", aud=["urn:other", "urn:x"], scope=["a", "b"])
    valid = _validator(cache).validate(token)
    assert valid.principal == "alice" and valid.scopes == {"a", "b"}
    assert valid.expires_ms == jwt.decode(token, options={"verify_signature": False})["exp"] * 1000


@pytest.mark.parametrize(("claims", "reason"), [
    ({"exp": int(time.time()) - 120}, "the token has expired"),
    ({"aud": "urn:elsewhere"}, "audience (aud) claim doesn't contain an acceptable identifier"),
    ({"iss": "https://evil.test"}, "issuer (iss) claim is not the expected issuer https://idp.test"),
    ({"iat": None}, 'Token is missing the "iat" claim'),
    ({"sub": None}, "sub value must be non-null"),
    ({"sub": "  "}, "sub value must not contain only whitespace"),
    ({"sub": 7}, "Subject must be a string"),
])
async def test_claim_checks(claims: dict[str, Any], reason: str) -> None:
    provider = _Provider("k1")
    cache = _cache(provider)
    await cache.refresh()
    with pytest.raises(InvalidToken) as caught:
        _validator(cache).validate(provider.token("k1", **claims))
    assert reason in str(caught.value)


async def test_clock_skew_lets_a_just_expired_token_in() -> None:
    provider = _Provider("k1")
    cache = _cache(provider)
    await cache.refresh()
    token = provider.token("k1", exp=int(time.time()) - 5)
    assert _validator(cache, skew=30).validate(token).principal == "alice"
    with pytest.raises(InvalidToken, match="expired"):
        _validator(cache, skew=0).validate(token)


async def test_malformed_unsigned_and_wrongly_signed_tokens_are_refused() -> None:
    provider, impostor = _Provider("k1"), _Provider("k1")
    cache = _cache(provider)
    await cache.refresh()
    validator = _validator(cache)
    unsigned = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60, "iat": 0}, None, algorithm="none")
    hmac_signed = jwt.encode({"sub": "alice"}, "secret-of-32-bytes-or-more-......", algorithm="HS256")
    for token, reason in ((unsigned, 'the JWS algorithm "none" is not permitted'),
                          (hmac_signed, 'the JWS algorithm "HS256" is not permitted'),
                          ("a.b", "but 2 sections provided"), ("", "Empty JWT provided"),
                          ("!!.@@.##", "Malformed JWT provided"),
                          (impostor.token("k1"), "the signature does not verify")):
        with pytest.raises(InvalidToken) as caught:
            validator.validate(token)
        assert reason in str(caught.value)
        assert not token or token not in str(caught.value)


async def test_an_unknown_kid_fails_and_refreshes_once_per_kid_within_the_wait() -> None:
    provider, fetches = _Provider("k1"), []
    cache = _cache(provider, fetches)
    await cache.refresh()
    provider.keys["k2"] = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # the provider rotates
    token = provider.token("k2")
    validator = _validator(cache)
    with pytest.raises(InvalidToken, match='Unable to find a suitable verification key for JWS w/ header .*"k2"'):
        validator.validate(token)
    with pytest.raises(InvalidToken):  # the refresh has not run yet: no second one for this kid
        validator.validate(token)
    await asyncio.sleep(0.2)
    assert len(fetches) == 2
    assert validator.validate(token).principal == "alice"
    for n in range(MISSING_KID_ENTRIES + 1):  # made-up kids: one refresh at a time, bounded memory
        assert cache.missing(f"made-up-{n}")
    assert len(cache._missing) == MISSING_KID_ENTRIES
    assert not cache.missing("made-up-16")


async def test_the_jwks_keeps_signing_keys_and_retries_before_giving_up() -> None:
    ec_jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()).public_key()))
    keys = parse_jwks({"keys": [ec_jwk | {"kid": "e"}, ec_jwk | {"kid": "enc", "use": "enc"},
                                {"kty": "nonsense", "kid": "x"}]})
    assert list(keys) == ["e"]
    calls = []

    def failing(url: str) -> Any:
        calls.append(url)
        raise OSError("connection refused")

    cache = JwksCache("http://127.0.0.1:1/jwks", 3_600_000, 10, 50, fetch=failing)
    with pytest.raises(JwksError, match="could not fetch the JWKS from http://127.0.0.1:1/jwks: connection refused"):
        await cache.refresh_with_retry()
    assert len(calls) == 4  # at once, then after 10, 20 and 20 ms (capped at 50 ms in all)


def test_unsecured_validator_takes_only_unsigned_tokens() -> None:
    validator = UnsecuredJwtValidator({"unsecuredValidatorRequiredScope": "kafka"})
    now = int(time.time())
    good = jwt.encode({"sub": "dev", "iat": now, "exp": now + 60, "scope": "kafka other"}, None, algorithm="none")
    assert validator.validate(good).principal == "dev"
    for claims, reason in (({"sub": "dev", "exp": now - 1}, "on or after the Expiration Time"),
                           ({"exp": now + 60, "scope": "kafka"}, "Required claim missing or not a string: sub"),
                           ({"sub": "dev", "exp": now + 60}, "missing required scope values: kafka")):
        with pytest.raises(InvalidToken, match=reason):
            validator.validate(jwt.encode(claims, None, algorithm="none"))
    signed = jwt.encode({"sub": "dev", "exp": now + 60}, "secret-of-32-bytes-or-more-......", algorithm="HS256")
    with pytest.raises(InvalidToken, match="must have 'none' for an algorithm"):
        validator.validate(signed)


async def test_a_refused_token_answers_json_then_fails_on_the_clients_ctrl_a() -> None:
    provider = _Provider("k1")
    cache = _cache(provider)
    await cache.refresh()
    server = OAuthBearerServer(_validator(cache))
    expired = provider.token("k1", exp=int(time.time()) - 120)
    assert server.evaluate(f"n,,\x01auth=Bearer {expired}\x01\x01".encode()) == b'{"status":"invalid_token"}'
    assert server.failure is not None and "expired" in server.failure and not server.complete
    with pytest.raises(AuthenticationFailed) as caught:
        server.evaluate(b"\x01")
    assert caught.value.client_message.startswith('{"status":"invalid_token"} (Could not validate the access token')
    assert caught.value.logged and expired not in caught.value.client_message
    server = OAuthBearerServer(_validator(cache))
    assert server.evaluate(f"n,,\x01auth=Bearer {provider.token('k1')}\x01\x01".encode()) == b""
    assert (server.complete, server.authorization_id) == (True, "alice")
    with pytest.raises(AuthenticationFailed, match=r"authorization id \(bob\) that is different"):
        first = f"n,a=bob,\x01auth=Bearer {provider.token('k1')}\x01\x01"
        OAuthBearerServer(_validator(cache)).evaluate(first.encode())


def _settings(props: dict[str, str]) -> ListenerSettings:
    config, unknown = build_config({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"} | props)
    assert not unknown
    return ListenerSettings(config, config.client_listeners[0])


HANDLER = {"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
           "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}


def test_listener_settings_choose_the_validator_as_kafka() -> None:
    assert isinstance(oauth_validator(_settings({})).validator, UnsecuredJwtValidator)
    signed = oauth_validator(_settings(HANDLER | {
        "sasl.oauthbearer.jwks.endpoint.url": "http://127.0.0.1:1/jwks",
        "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.expected.audience": "urn:a, urn:b",
        "listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer": ISSUER}))
    assert isinstance(signed.validator, BrokerJwtValidator) and signed.jwks is not None
    assert signed.validator._audiences == ("urn:a", "urn:b") and signed.validator._issuer == ISSUER
    with pytest.raises(ConfigError, match="sasl.oauthbearer.jwks.endpoint.url is required"):
        oauth_validator(_settings(HANDLER))
    with pytest.raises(ConfigError, match="sasl.oauthbearer.expected.audience must be set"):
        oauth_validator(_settings(HANDLER | {"sasl.oauthbearer.jwks.endpoint.url": "http://x/jwks",
                                             "sasl.oauthbearer.expected.issuer": ISSUER}))
    unverified = oauth_validator(_settings(HANDLER | {"sasl.oauthbearer.jwks.endpoint.url": "http://x/jwks",
                                                      "sasl.oauthbearer.allow.unverified.audience": "true",
                                                      "sasl.oauthbearer.allow.unverified.issuer": "true"}))
    assert unverified.validator._audiences == () and unverified.validator._issuer is None
    with pytest.raises(ConfigError, match="Invalid value com.example.Mine for configuration"):
        oauth_validator(_settings({next(iter(HANDLER)): "com.example.Mine"}))


@pytest.mark.parametrize("reauth_ms", [0, 1000])
async def test_the_session_ends_with_the_token_or_connections_max_reauth_ms_first(reauth_ms: int) -> None:
    """Kafka's ReauthInfo: the session lifetime is the token's remaining life, bounded by
    connections.max.reauth.ms when that is set; the client may re-authenticate either way."""
    from broker.security.oauthbearer import OAuthSettings
    from broker.security.sasl import SaslAuthenticator, SaslServerConfig, SaslState

    provider = _Provider("k1")
    cache = _cache(provider)
    await cache.refresh()
    config = SaslServerConfig(listener="SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",), plain_users={},
                              scram_lookup=lambda _m, _u: None, max_receive_size=524288, reauth_ms=reauth_ms,
                              oauth=OAuthSettings(_validator(cache), cache))
    sasl = SaslAuthenticator(config, "127.0.0.1:5")
    token = provider.token("k1", exp=int(time.time()) + 120)
    for _ in range(2):  # the login, then a re-authentication with the same principal
        assert sasl.handshake("OAUTHBEARER", 1) == 0
        assert sasl.authenticate(f"n,,\x01auth=Bearer {token}\x01\x01".encode()) == b""
        assert sasl.state is SaslState.COMPLETE and str(sasl.principal) == "User:alice"
        expected = 1000 if reauth_ms else 120_000
        assert expected - 2000 < sasl.session_lifetime_ms <= expected
        assert sasl.session_expires is not None
