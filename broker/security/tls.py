"""TLS for SSL and SASL_SSL listeners from Python's ssl module, configured with Kafka's ssl.*
properties (Kafka's DefaultSslEngineFactory: its checks and its messages).

Key stores: PEM (ssl.keystore.type=PEM, a file with the private key and certificate chain at
ssl.keystore.location, or both inline as ssl.keystore.key / ssl.keystore.certificate.chain; an
encrypted PKCS#8 key is decrypted with ssl.key.password) and PKCS12 (ssl.keystore.password). JKS,
Kafka's default type, is Java's own format: a listener that would need one is refused at start-up
with how to convert it. Trust stores likewise (PEM or PKCS12), for client certificates.

Key material is read once, when the broker starts; inline PEM and PKCS12 contents reach OpenSSL
through anonymous memory files, never through a file on disk. Every problem is a StartupError that
names the listener and the property.
"""

from __future__ import annotations

import base64
import os
import re
import ssl
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from ..startup import StartupError
from .settings import ListenerSettings

if TYPE_CHECKING:  # cryptography loads only for a PKCS12 store
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

__all__ = ("client_auth", "client_context", "server_context")

_PEM_BLOCK: Final = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)
_PROTOCOLS: Final = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
                     "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY: Final = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


class _Refused(Exception):
    """A key or trust store problem; server_context adds the listener's name."""


def client_auth(settings: ListenerSettings) -> str:
    """ssl.client.auth of a listener: on SASL_SSL only a listener-prefixed value counts, as in
    Kafka (SASL authenticates those clients)."""
    if settings.listener.security_protocol == "SASL_SSL" and not settings.overridden("ssl.client.auth"):
        return "none"
    value: str = settings.get("ssl.client.auth")
    return value


def server_context(settings: ListenerSettings) -> ssl.SSLContext:
    """The listener's server-side SSLContext, or StartupError."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        _set_protocols(context, settings.get("ssl.enabled.protocols"))
        _load_keystore(context, settings)
        auth = client_auth(settings)
        if auth != "none":
            _load_truststore(context, settings)
            context.verify_mode = _VERIFY[auth]
    except _Refused as exc:
        raise StartupError(f"listener {settings.listener.name}: {exc}") from None
    return context


def client_context(settings: ListenerSettings, what: str | None = None) -> ssl.SSLContext:
    """The client side of a listener's TLS, as a Kafka broker connects to another one on its
    inter-broker listener: the listener's trust store verifies the peer (and, with
    ssl.endpoint.identification.algorithm=https, that its certificate names the host), and its key
    store, when it has one, is this broker's client certificate (the peer may require one).
    `what` names the connection in a StartupError (default: the inter-broker listener)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        _set_protocols(context, settings.get("ssl.enabled.protocols"))
        context.check_hostname = settings.get("ssl.endpoint.identification.algorithm").lower() == "https"
        _load_truststore(context, settings, ssl.Purpose.SERVER_AUTH)
        if settings.get("ssl.keystore.location") is not None or settings.get("ssl.keystore.key") is not None:
            _load_keystore(context, settings)
    except _Refused as exc:
        raise StartupError(f"{what or f'inter-broker listener {settings.listener.name}'}: {exc}") from None
    return context


def _set_protocols(context: ssl.SSLContext, enabled: str) -> None:
    names = [n.strip() for n in enabled.split(",") if n.strip()]
    unknown = [n for n in names if n not in _PROTOCOLS]
    if unknown or not names:
        raise _Refused(f"ssl.enabled.protocols={enabled}: expected some of {', '.join(_PROTOCOLS)}")
    versions = sorted(_PROTOCOLS[n] for n in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


def _pem(text: str, what: str) -> tuple[bytes, bool]:
    """PEM as OpenSSL reads it, from Kafka's lenient form (a properties value may join the base64
    lines); also whether it holds an encrypted key."""
    blocks = _PEM_BLOCK.findall(text)
    if not blocks:
        raise _Refused(f"{what} holds no PEM block (-----BEGIN ...-----)")
    out, encrypted = [], False
    for label, body in blocks:
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except ValueError:
            raise _Refused(f"{what}: the {label} block is not valid base64") from None
        encrypted |= label == "ENCRYPTED PRIVATE KEY" or "Proc-Type: 4,ENCRYPTED" in body
        lines = textwrap.wrap(base64.b64encode(der).decode(), 64)
        out.append(f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n")
    return "".join(out).encode(), encrypted


@contextmanager
def _memory_file(data: bytes) -> Iterator[str]:
    """A path OpenSSL can open that holds `data` in memory only (key material stays off disk)."""
    fd = os.memfd_create("eosbroker-tls", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise _Refused(f"Failed to load SSL {what} {path}: {exc.strerror or exc}") from None


def _load_keystore(context: ssl.SSLContext, settings: ListenerSettings) -> None:
    kind: str = settings.get("ssl.keystore.type").upper()
    path, password = settings.get("ssl.keystore.location"), settings.get("ssl.keystore.password")
    key, chain = settings.get("ssl.keystore.key"), settings.get("ssl.keystore.certificate.chain")
    key_password = settings.get("ssl.key.password")
    if key is not None or chain is not None:
        _check_inline_keystore(kind, path, password, key, chain)
        key_pem, encrypted = _pem(key, "ssl.keystore.key")
        chain_pem, _ = _pem(chain, "ssl.keystore.certificate.chain")
        _load_pem_pair(context, chain_pem, key_pem, encrypted, key_password, "ssl.keystore.key")
    elif path is None:
        raise _Refused("no SSL key store: set ssl.keystore.location (with ssl.keystore.type=PEM or PKCS12) or "
                       "ssl.keystore.certificate.chain and ssl.keystore.key")
    elif kind == "PEM":
        if password is not None:
            raise _Refused("SSL key store password cannot be specified with PEM format, only key password may be "
                           "specified")
        pem, encrypted = _pem(_read(path, "keystore").decode("utf-8", "replace"), f"SSL keystore {path}")
        _load_pem_pair(context, pem, pem, encrypted, key_password, f"SSL keystore {path}")
    elif kind == "PKCS12":
        if password is None:
            raise _Refused("SSL key store is specified, but key store password is not specified.")
        _load_pkcs12_keystore(context, path, password, key_password)
    else:
        raise _Refused(_unsupported_type("ssl.keystore.type", kind))


def _check_inline_keystore(kind: str, path: str | None, password: str | None, key: str | None,
                           chain: str | None) -> None:
    if key is None:
        raise _Refused("SSL certificate chain is specified, but private key is not specified")
    if kind != "PEM":
        raise _Refused(f"SSL private key can be specified only for PEM, but key store type is {kind}.")
    if chain is None:
        raise _Refused("SSL private key is specified, but certificate chain is not specified.")
    if path is not None:
        raise _Refused("Both SSL key store location and separate private key are specified.")
    if password is not None:
        raise _Refused("SSL key store password cannot be specified with PEM format, only key password may be "
                       "specified.")


def _load_pem_pair(context: ssl.SSLContext, chain: bytes, key: bytes, encrypted: bool, key_password: str | None,
                   what: str) -> None:
    if encrypted and key_password is None:
        raise _Refused(f"{what}: the private key is encrypted and ssl.key.password is not set")
    # A callable, never None: OpenSSL would otherwise prompt on a terminal for a passphrase.
    password = (key_password or "").encode()
    with _memory_file(chain) as chain_path, _memory_file(key) as key_path:
        try:
            context.load_cert_chain(chain_path, key_path, password=lambda: password)
        except ssl.SSLError as exc:
            why = "wrong ssl.key.password" if encrypted else "the private key does not match the certificate"
            raise _Refused(f"Failed to load {what}: {why} ({exc.reason or exc})") from None


def _pkcs12(path: str, password: str) -> PKCS12KeyAndCertificates:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(_read(path, "keystore"), password.encode())
    except ValueError as exc:
        raise _Refused(f"Failed to load SSL store {path} of type PKCS12: wrong password or not PKCS12 "
                       f"({exc})") from None


def _load_pkcs12_keystore(context: ssl.SSLContext, path: str, password: str, key_password: str | None) -> None:
    from cryptography.hazmat.primitives import serialization

    store = _pkcs12(path, password)
    if store.key is None or store.cert is None:
        raise _Refused(f"SSL keystore {path} holds no private key with its certificate")
    key = store.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    certs = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)
    _load_pem_pair(context, chain, key, False, None, f"SSL keystore {path}")


def _load_truststore(context: ssl.SSLContext, settings: ListenerSettings,
                     purpose: ssl.Purpose = ssl.Purpose.CLIENT_AUTH) -> None:
    kind: str = settings.get("ssl.truststore.type").upper()
    path, password = settings.get("ssl.truststore.location"), settings.get("ssl.truststore.password")
    certs = settings.get("ssl.truststore.certificates")
    if certs is not None:
        if kind != "PEM":
            raise _Refused(f"SSL trust store certs can be specified only for PEM, but trust store type is {kind}.")
        if path is not None:
            raise _Refused("Both SSL trust store location and separate trust certificates are specified.")
        pem = _pem(certs, "ssl.truststore.certificates")[0]
    elif path is None:
        context.load_default_certs(purpose)  # as Java falls back on its default CAs
        return
    elif kind == "PEM":
        if password is not None:
            raise _Refused("SSL trust store password cannot be specified for PEM format.")
        pem = _pem(_read(path, "truststore").decode("utf-8", "replace"), f"SSL truststore {path}")[0]
    elif kind == "PKCS12":
        pem = _pkcs12_certificates(path, password or "")
    else:
        raise _Refused(_unsupported_type("ssl.truststore.type", kind))
    try:
        context.load_verify_locations(cadata=pem.decode())
    except ssl.SSLError as exc:
        raise _Refused(f"Failed to load the SSL trust store: {exc.reason or exc}") from None


def _pkcs12_certificates(path: str, password: str) -> bytes:
    from cryptography.hazmat.primitives import serialization

    store = _pkcs12(path, password)
    certs = ([store.cert] if store.cert is not None else []) + list(store.additional_certs)
    if not certs:
        raise _Refused(f"SSL truststore {path} holds no certificate")
    return b"".join(c.certificate.public_bytes(serialization.Encoding.PEM) for c in certs)


def _unsupported_type(key: str, kind: str) -> str:
    if kind == "JKS":
        return (f"{key}=JKS (Kafka's default) is Java's own format, which eosbroker does not read: set {key}=PEM "
                "(or PKCS12, e.g. converted with keytool -importkeystore -deststoretype PKCS12)")
    return f"{key}={kind} is not supported: use PEM or PKCS12"
