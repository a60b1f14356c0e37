"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it, against the users of the listener's
`listener.name.<listener>.plain.sasl.jaas.config` (PlainLoginModule options user_<name>="<password>").
The token is [authzid] NUL authcid NUL passwd; an authzid other than the user is refused."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from .jaas import JaasEntry
from .sasl_errors import AuthenticationFailed

__all__ = ("PLAIN_LOGIN_MODULE", "PlainServer", "plain_users")

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_USER_PREFIX = "user_"


def plain_users(entries: list[JaasEntry]) -> dict[str, str]:
    """user -> password of the PlainLoginModule entries (Kafka's PlainServerCallbackHandler)."""
    return {key[len(_USER_PREFIX):]: value for entry in entries if entry.login_module == PLAIN_LOGIN_MODULE
            for key, value in entry.options.items() if key.startswith(_USER_PREFIX)}


class PlainServer:
    """One exchange: a single client token, an empty answer."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.authorization_id: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, user, password = parts
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified", user=user)
        expected = self._users.get(user)
        # compare_digest either way, so the time taken does not tell whether the user exists.
        matches = hmac.compare_digest(password.encode(), (expected if expected is not None else "\0").encode())
        if expected is None or not matches:
            detail = "unknown user" if expected is None else "wrong password"
            raise AuthenticationFailed("Authentication failed: Invalid username or password", detail, user)
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username", user=user)
        self.authorization_id = user
        self.complete = True
        return b""
