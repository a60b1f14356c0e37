"""The client side of SCRAM-SHA-256/512 (RFC 5802, RFC 7677), as a broker logs in to another broker
with sasl.mechanism.inter.broker.protocol: client-first, then client-final with the proof, then the
server's signature checked, so a peer that does not hold this user's credential cannot pretend."""

from __future__ import annotations

import base64
import hmac
import secrets

from .sasl_errors import AuthenticationFailed
from .scram import ScramMechanism, salted_password

__all__ = ("ScramClient",)


def _sasl_name(name: str) -> str:
    """RFC 5802's saslname: "," and "=" escaped."""
    return name.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    def __init__(self, mechanism: ScramMechanism, username: str, password: str) -> None:
        self._mechanism = mechanism
        self._password = password
        self._first_bare = f"n={_sasl_name(username)},r={secrets.token_urlsafe(24)}"
        self._server_signature = b""

    def first_message(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        """The proof for the server's salt, iterations and nonce."""
        text = server_first.decode("utf-8", "replace")
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        nonce, salt, iterations = fields.get("r", ""), fields.get("s"), fields.get("i", "")
        if not nonce.startswith(self._first_bare.rpartition("r=")[2]) or salt is None or not iterations.isdigit():
            raise AuthenticationFailed("invalid server-first message", "the server's nonce, salt or iterations")
        mech = self._mechanism
        if int(iterations) < mech.min_iterations:
            raise AuthenticationFailed(f"the server asked for {iterations} iterations, fewer than "
                                       f"{mech.min_iterations}", "weak credential")
        salted = salted_password(mech, self._password, base64.b64decode(salt), int(iterations))
        client_key = mech.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        proof = bytes(a ^ b for a, b in zip(client_key, mech.hmac(mech.h(client_key), auth_message), strict=True))
        self._server_signature = mech.hmac(mech.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_server_final(self, server_final: bytes) -> None:
        text = server_final.decode("utf-8", "replace")
        if text.startswith("e="):
            raise AuthenticationFailed(f"the server refused: {text[2:]}", text[2:])
        signature = base64.b64decode(text[2:]) if text.startswith("v=") else b""
        if not hmac.compare_digest(signature, self._server_signature):
            raise AuthenticationFailed("the server's signature does not verify: it does not hold this user's "
                                       "credential", "bad server signature")
