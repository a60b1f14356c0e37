"""Security case t2: the time from connect() to the first answered request, on each listener.

Params: connections (per kind), ports ({listener: port}), ca (the CA file), user, password, token
(an OIDC provider's access token). For each kind, one connection at a time: TCP connect; for SSL
and SASL_SSL the TLS handshake (TLSv1.3, verifying the broker's certificate); for SASL_SSL
SaslHandshake v1 and SaslAuthenticate (PLAIN: one round; SCRAM-SHA-512: two, with the client's
own PBKDF2 and the server signature checked; OAUTHBEARER: one, the broker checking the token's
signature and claims); then ApiVersions v3. Figures: p50 and p99 ms per kind.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import time
from collections.abc import Callable

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from bench.load.common import Meter, emit, percentile
from tests.kafka_wire import decode_response, encode_request, frame, recv_frame

KINDS = ("plaintext", "tls", "sasl_ssl-plain", "sasl_ssl-scram-sha-512", "sasl_ssl-oauthbearer")


def _request(sock: socket.socket, entity: object) -> object:
    sock.sendall(frame(encode_request(entity, 1)))
    return decode_response(recv_frame(sock), entity.__api_key__, entity.__version__)[1]  # type: ignore[attr-defined]


def _authenticate(sock: socket.socket, token: bytes) -> bytes:
    answer = _request(sock, SaslAuthenticateRequest(auth_bytes=token))
    if answer.error_code != 0:  # type: ignore[attr-defined]
        raise RuntimeError(f"SASL failed: {answer.error_message}")  # type: ignore[attr-defined]
    return answer.auth_bytes  # type: ignore[attr-defined, no-any-return]


def _scram_sha_512(sock: socket.socket, user: str, password: str) -> None:
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={user},r={nonce}"
    server_first = _authenticate(sock, f"n,,{first_bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha512(client_key).digest(), auth, "sha512").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    final = _authenticate(sock, f"{without_proof},p={proof}".encode())
    server_key = hmac.new(salted, b"Server Key", "sha512").digest()
    if final != b"v=" + base64.b64encode(hmac.new(server_key, auth, "sha512").digest()):
        raise RuntimeError("the broker's SCRAM signature does not verify")


def _connect(port: int, context: ssl.SSLContext | None, sasl: Callable[[socket.socket], None] | None) -> float:
    t0 = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
        if sasl is not None:
            sasl(sock)
        _request(sock, ApiVersionsRequest(client_software_name="bench", client_software_version="1"))
        return (time.perf_counter() - t0) * 1000
    finally:
        sock.close()


def run(bootstrap: str, params: dict) -> None:
    ports, user, password = params["ports"], params["user"], params["password"]
    context = ssl.create_default_context(cafile=params["ca"])
    context.minimum_version = ssl.TLSVersion.TLSv1_3

    def plain(sock: socket.socket) -> None:
        _request(sock, SaslHandshakeRequest(mechanism="PLAIN"))
        _authenticate(sock, f"\0{user}\0{password}".encode())

    def scram(sock: socket.socket) -> None:
        _request(sock, SaslHandshakeRequest(mechanism="SCRAM-SHA-512"))
        _scram_sha_512(sock, user, password)

    def oauthbearer(sock: socket.socket) -> None:
        _request(sock, SaslHandshakeRequest(mechanism="OAUTHBEARER"))
        if _authenticate(sock, f"n,,\x01auth=Bearer {params['token']}\x01\x01".encode()):
            raise RuntimeError("the broker refused the token")  # its JSON challenge

    kinds = {"plaintext": (int(bootstrap.rsplit(":", 1)[1]), None, None), "tls": (ports["SSL"], context, None),
             "sasl_ssl-plain": (ports["SASL_SSL"], context, plain),
             "sasl_ssl-scram-sha-512": (ports["SASL_SSL"], context, scram),
             "sasl_ssl-oauthbearer": (ports["SASL_SSL"], context, oauthbearer)}
    meter = Meter()
    metrics: dict[str, float] = {}
    for kind, (port, ctx, sasl) in kinds.items():
        times = [_connect(port, ctx, sasl) for _ in range(params["connections"])]
        metrics[f"{kind} p50 ms"] = percentile(times, 50)
        metrics[f"{kind} p99 ms"] = percentile(times, 99)
    emit(metrics, meter)
