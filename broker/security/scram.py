"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the server side, as Kafka's
ScramSaslServer runs them: client-first ("n,[a=authzid],n=user,r=nonce"), server-first
("r=nonce,s=salt,i=iterations"), client-final ("c=biws,r=nonce,p=proof"), server-final
("v=signature", which the client checks, so a broker that does not know the password cannot
pretend). No channel binding, no delegation tokens (the tokenauth extension is refused).

The broker keeps per user and mechanism only the salt, the iteration count, StoredKey and
ServerKey: enough to verify a client proof and sign, never enough to log in as the user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from storage.api import ScramCredential

from .sasl_errors import AuthenticationFailed

__all__ = ("MECHANISMS", "ScramCredential", "ScramMechanism", "ScramServer", "credential_from_salted_password",
           "salted_password")


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    hash_name: str
    min_iterations: int = 4096  # Kafka's ScramMechanism minimum for both
    max_iterations: int = 16384

    def h(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()


MECHANISMS: Final = {m.name: m for m in (ScramMechanism("SCRAM-SHA-256", "sha256"),
                                         ScramMechanism("SCRAM-SHA-512", "sha512"))}


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): what a client (kafka-configs included) sends in AlterUserScramCredentials."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def credential_from_salted_password(mechanism: ScramMechanism, salted: bytes, salt: bytes,
                                    iterations: int) -> ScramCredential:
    client_key = mechanism.hmac(salted, b"Client Key")
    return ScramCredential(salt=salt, stored_key=mechanism.h(client_key),
                           server_key=mechanism.hmac(salted, b"Server Key"), iterations=iterations)


_CLIENT_FIRST: Final = re.compile(r"n,(?:a=(?P<authzid>[^,]*))?,n=(?P<user>[^,]*),r=(?P<nonce>[^,]*)(?P<ext>.*)",
                                  re.S)
_CLIENT_FINAL: Final = re.compile(r"c=(?P<binding>[^,]*),r=(?P<nonce>[^,]*)(?P<ext>.*),p=(?P<proof>[^,]*)", re.S)


def _sasl_name(name: str) -> str:
    """RFC 5802's saslname: "=2C" is ",", "=3D" is "="."""
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM exchange: evaluate() takes the client's two messages in turn."""

    def __init__(self, mechanism: ScramMechanism, lookup: Callable[[str, str], ScramCredential | None]) -> None:
        self.mechanism = mechanism.name
        self._mechanism = mechanism
        self._lookup = lookup
        self._step = 0
        self._first_bare = self._server_first = self._gs2_header = self._nonce = ""
        self._credential: ScramCredential | None = None
        self.authorization_id: str | None = None
        self.complete = False

    def _fail(self, detail: str) -> AuthenticationFailed:
        # Kafka keeps SCRAM's reasons from the client: they could tell which users exist.
        return AuthenticationFailed("Authentication failed during authentication due to invalid credentials with "
                                    f"SASL mechanism {self.mechanism}", detail, self.authorization_id)

    def evaluate(self, token: bytes) -> bytes:
        message = token.decode("utf-8", "replace")
        self._step += 1
        if self._step == 1:
            return self._first(message).encode()
        if self._step == 2:
            return self._final(message).encode()
        raise self._fail("unexpected message after the exchange ended")

    def _first(self, message: str) -> str:
        m = _CLIENT_FIRST.fullmatch(message)
        if m is None:
            raise self._fail("invalid client-first message (channel binding is not supported)")
        user = self.authorization_id = _sasl_name(m["user"])
        if m["ext"] and "tokenauth" in m["ext"]:
            raise self._fail("delegation tokens are not supported")
        if m["authzid"] and _sasl_name(m["authzid"]) != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username", user=user)
        credential = self._lookup(user, self.mechanism)
        if credential is None:
            raise self._fail("unknown user (no credential for this mechanism)")
        if credential.iterations < self._mechanism.min_iterations:
            raise self._fail(f"Iterations {credential.iterations} is less than the minimum "
                             f"{self._mechanism.min_iterations} for {self.mechanism}")
        self._credential = credential
        bare_start = m.start("user") - 2  # "n=user,r=..." follows the GS2 header "n,," or "n,a=...,"
        self._gs2_header, self._first_bare = message[:bare_start], message[bare_start:]
        self._nonce = m["nonce"] + secrets.token_urlsafe(24)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first

    def _final(self, message: str) -> str:
        m = _CLIENT_FINAL.fullmatch(message)
        if m is None:
            raise self._fail("invalid client-final message")
        if m["nonce"] != self._nonce:
            raise self._fail("Invalid client nonce in the final client message.")
        try:
            binding, proof = base64.b64decode(m["binding"]), base64.b64decode(m["proof"])
        except ValueError:
            raise self._fail("invalid base64 in the client-final message") from None
        if binding != self._gs2_header.encode():
            raise self._fail("channel binding does not match the GS2 header")
        credential, mech = self._credential, self._mechanism
        assert credential is not None
        without_proof = message[:m.start("proof") - 3]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = mech.hmac(credential.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(mech.h(client_key), credential.stored_key):
            raise self._fail("wrong password (the client proof does not verify)")
        self.complete = True
        return "v=" + base64.b64encode(mech.hmac(credential.server_key, auth_message)).decode()
