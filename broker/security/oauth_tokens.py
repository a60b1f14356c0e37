"""The two ways a broker validates a SASL/OAUTHBEARER token, as Kafka 4.4's validators do:

- BrokerJwtValidator (OAuthBearerValidatorCallbackHandler configured): a signed JWT, its signature
  checked against the provider's JWKS (broker/security/jwks.py), `exp` and `iat` required, `exp`/`nbf`
  with `sasl.oauthbearer.clock.skew.seconds` of leeway, `aud` among `sasl.oauthbearer.expected.audience`
  and `iss` equal to `sasl.oauthbearer.expected.issuer` (each checked unless allowed unverified), the
  principal from `sasl.oauthbearer.sub.claim.name`. Unsigned (`alg: none`) and HMAC tokens are refused:
  a broker holds no shared secret. Any `typ` is accepted (`JWT`, `at+jwt`).
- UnsecuredJwtValidator (Kafka's default, OAuthBearerUnsecuredValidatorCallbackHandler): accepts only
  unsigned tokens, checking their claims alone. Anyone can mint one: for development only.

PyJWT does the JOSE work. A failure is InvalidToken with the reason, which never holds the token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import jwt

from .jwks import JwksCache

__all__ = ("BrokerJwtValidator", "InvalidToken", "UnsecuredJwtValidator", "ValidToken")

# The asymmetric JWS algorithms (RFC 7518, RFC 8037) a JWKS can verify.
SIGNED_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
                            "EdDSA")
_COULD_NOT: Final = "Could not validate the access token: "


class InvalidToken(Exception):
    """The token is refused; str() is the reason, safe to log and to tell the client."""


@dataclass(frozen=True, slots=True)
class ValidToken:
    principal: str
    expires_ms: int  # the exp claim, in ms since the epoch
    scopes: frozenset[str]


def split_jwt(token: str) -> tuple[dict[str, object], dict[str, object], str]:
    """(header, claims, signature) without any check of the signature; InvalidToken if malformed.
    Kafka's SerializedJwt wording, less the token it quotes."""
    if not token.strip():
        raise InvalidToken("Empty JWT provided; expected three sections (header, payload, and signature)")
    sections = token.split(".")
    if len(sections) != 3:
        raise InvalidToken("Malformed JWT provided; expected three sections (header, payload, and signature), but "
                           f"{len(sections)} sections provided")
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.DecodeError as exc:
        raise InvalidToken(f"Malformed JWT provided: {exc}") from None
    return header, claims, sections[2]


def _string_claim(claims: Mapping[str, object], name: str) -> str:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidToken(f"Could not extract the '{name}' claim from the access token")
    if value is None:
        raise InvalidToken(f"{name} value must be non-null")
    if not value:
        raise InvalidToken(f"{name} value must be non-empty")
    if not value.strip():
        raise InvalidToken(f"{name} value must not contain only whitespace")
    return value.strip()


def _scopes(claims: Mapping[str, object], name: str) -> frozenset[str]:
    # As Kafka's validator: a string claim is one scope, a list is several.
    raw = claims.get(name)
    values = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return frozenset(str(v).strip() for v in values if str(v).strip())


def _expiry_ms(claims: Mapping[str, object]) -> int:
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise InvalidToken("exp value must be non-null")
    if exp < 0:
        raise InvalidToken(f"exp value must be non-negative; value given was \"{exp}\"")
    return int(exp * 1000)


class BrokerJwtValidator:
    def __init__(self, keys: JwksCache, *, audiences: tuple[str, ...], issuer: str | None, clock_skew_s: int,
                 sub_claim: str, scope_claim: str) -> None:
        self.keys = keys
        self._audiences = audiences
        self._issuer = issuer
        self._skew_s = clock_skew_s
        self._sub_claim = sub_claim
        self._scope_claim = scope_claim

    def validate(self, token: str) -> ValidToken:
        header, _, _ = split_jwt(token)
        alg = header.get("alg")
        if alg == "none" or alg not in SIGNED_ALGORITHMS:
            raise InvalidToken(f"Malformed JWT provided: the JWS algorithm {json.dumps(alg)} is not permitted "
                               f"(permitted: {', '.join(SIGNED_ALGORITHMS)})")
        kid = header.get("kid")
        key = self.keys.key_for(kid if isinstance(kid, str) else None)
        if key is None:
            self.keys.missing(kid if isinstance(kid, str) else None)
            raise InvalidToken(f"Unable to find a suitable verification key for JWS w/ header "
                               f"{json.dumps(header, sort_keys=True)} from the JWKS at {self.keys.url} (a refresh "
                               "of the JWKS was started if this key id had none in the last 60 s)")
        claims = self._verified_claims(token, key, alg)
        return ValidToken(principal=_string_claim(claims, self._sub_claim), expires_ms=_expiry_ms(claims),
                          scopes=_scopes(claims, self._scope_claim))

    def _verified_claims(self, token: str, key: jwt.PyJWK, alg: str) -> dict[str, object]:
        try:
            return jwt.decode(token, key, algorithms=[alg], audience=self._audiences or None, issuer=self._issuer,
                              leeway=self._skew_s,
                              options={"require": ["exp", "iat"], "verify_aud": bool(self._audiences)})
        except jwt.ExpiredSignatureError:
            raise InvalidToken(f"{_COULD_NOT}the token has expired (exp is in the past, even with "
                               f"sasl.oauthbearer.clock.skew.seconds={self._skew_s} of leeway)") from None
        except jwt.InvalidAudienceError as exc:
            raise InvalidToken(f"{_COULD_NOT}audience (aud) claim doesn't contain an acceptable identifier "
                               f"(expected one of {', '.join(self._audiences)}): {exc}") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken(f"{_COULD_NOT}issuer (iss) claim is not the expected issuer "
                               f"{self._issuer}") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken(f"{_COULD_NOT}the signature does not verify with the key of the JWKS it names "
                               "(wrongly signed or altered)") from None
        except jwt.InvalidTokenError as exc:  # missing exp/iat, nbf or iat in the future, a bad key
            raise InvalidToken(f"{_COULD_NOT}{exc}") from None


class UnsecuredJwtValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, with its JAAS options
    unsecuredValidatorPrincipalClaimName / ScopeClaimName / RequiredScope / AllowableClockSkewMs."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub"
        self._scope_claim = options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope"
        self._required_scope = frozenset(options.get("unsecuredValidatorRequiredScope", "").split())
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip() or "0"
        if not skew.isdigit():
            raise ValueError(f"Allowable clock skew millis must be a non-negative integer: {skew}")
        self._skew_ms = int(skew)

    def validate(self, token: str) -> ValidToken:
        header, claims, signature = split_jwt(token)
        if header.get("alg") != "none" or signature:
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm and no signature")
        principal = claims.get(self._principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"Required claim missing or not a string: {self._principal_claim}")
        now_ms = time.time() * 1000
        expires_ms = _expiry_ms(claims)
        issued = claims.get("iat")
        if isinstance(issued, int | float) and issued * 1000 > now_ms + self._skew_ms:
            raise InvalidToken(f"The Issued At value ({issued * 1000:.0f} ms) is in the future")
        if now_ms - self._skew_ms >= expires_ms:
            raise InvalidToken(f"The indicated time ({now_ms:.0f} ms) is on or after the Expiration Time value "
                               f"({expires_ms} ms)")
        raw_scope = claims.get(self._scope_claim)  # a space-separated string here (OAuthBearerScopeUtils)
        scopes = frozenset(raw_scope.split()) if isinstance(raw_scope, str) else _scopes(claims, self._scope_claim)
        if missing := self._required_scope - scopes:
            raise InvalidToken(f"The provided scope is missing required scope values: {', '.join(sorted(missing))}")
        return ValidToken(principal=principal.strip(), expires_ms=expires_ms, scopes=scopes)
