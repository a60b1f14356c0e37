"""Certificates for TLS tests, made with `cryptography` in a temporary directory: a test CA, the
broker's certificate (localhost and 127.0.0.1) with an encrypted PKCS#8 key in a PEM key store, as
Kafka operators' files are, and client certificates: trusted, expired, and from an untrusted CA."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SERVER_KEY_PASSWORD = "server-key-secret"
CLIENT_SUBJECT = "CN=alice,OU=Payments,O=Acme\\, Inc.,C=GB"  # as Java's X500Principal.getName() writes it


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsFiles:
    ca: Path  # the test CA's certificate: the clients' and the broker's trust store
    server_keystore: Path  # encrypted PKCS#8 key + certificate chain (ssl.keystore.type=PEM)
    server_keystore_unencrypted: Path  # the same, the key in the clear (no ssl.key.password)
    server_cert: Path
    server_key: Path  # the same key, encrypted, alone (ssl.keystore.key)
    client_cert: Path
    client_key: Path  # unencrypted
    expired_cert: Path
    expired_key: Path
    untrusted_cert: Path
    untrusted_key: Path

    def broker_settings(self, listener: str | None = None, client_auth: str | None = None) -> dict[str, str]:
        """ssl.* properties for the broker, or for one listener (listener.name.<name>.ssl.*)."""
        prefix = f"listener.name.{listener.lower()}." if listener else ""
        out = {f"{prefix}ssl.keystore.type": "PEM", f"{prefix}ssl.keystore.location": str(self.server_keystore),
               f"{prefix}ssl.key.password": SERVER_KEY_PASSWORD, f"{prefix}ssl.truststore.type": "PEM",
               f"{prefix}ssl.truststore.location": str(self.ca)}
        if client_auth is not None:
            out[f"{prefix}ssl.client.auth"] = client_auth
        return out


def _name(cn: str, **extra: str) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COUNTRY_NAME, extra.get("c", "GB"))] if "c" in extra else []
    if "o" in extra:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, extra["o"]))
    if "ou" in extra:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, extra["ou"]))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def _cert(subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
          issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool = False, sans: list[x509.GeneralName] | None = None,
          expired: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    start, end = (now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)) if expired else (
        now - datetime.timedelta(hours=1), now + datetime.timedelta(days=30))
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def make_tls_files(directory: Path) -> TlsFiles:
    import ipaddress

    directory.mkdir(parents=True, exist_ok=True)
    ca_key, other_ca_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name, other_ca_name = _name("eosbroker test CA"), _name("someone else's CA")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert(_name("localhost"), server_key, ca_name, ca_key,
                   sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    files: dict[str, Path] = {}

    def write(name: str, data: bytes) -> Path:
        files[name] = path = directory / f"{name}.pem"
        path.write_bytes(data)
        return path

    write("ca", _pem(ca))
    encrypted = _key_pem(server_key, SERVER_KEY_PASSWORD)
    write("server_keystore", encrypted + _pem(server) + _pem(ca))
    write("server_keystore_unencrypted", _key_pem(server_key) + _pem(server) + _pem(ca))
    write("server_cert", _pem(server) + _pem(ca))
    write("server_key", encrypted)
    client_name = _name("alice", c="GB", o="Acme, Inc.", ou="Payments")
    for label, issuer_name, issuer_key, expired in (("client", ca_name, ca_key, False),
                                                    ("expired", ca_name, ca_key, True),
                                                    ("untrusted", other_ca_name, other_ca_key, False)):
        key = ec.generate_private_key(ec.SECP256R1())
        write(f"{label}_cert", _pem(_cert(client_name, key, issuer_name, issuer_key, expired=expired)))
        write(f"{label}_key", _key_pem(key))
    return TlsFiles(**files)
