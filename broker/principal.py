"""Who sent a request: the principal a connection authenticated as, and where it came from.

The seam between authentication (listeners, TLS, SASL: broker/security/) and authorization (ACLs):
each connection settles its Session once, when it is accepted (PLAINTEXT, SSL) or when SASL
authentication succeeds, and every RequestContext carries it. Names follow Kafka's: KafkaPrincipal
is "User:alice" (principal type, name); a connection with no identity, PLAINTEXT or SSL without a
client certificate, is User:ANONYMOUS, as Kafka's DefaultKafkaPrincipalBuilder makes it.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass
from typing import Final

__all__ = ("ANONYMOUS", "KafkaPrincipal", "LOCAL_ANONYMOUS", "Session", "USER_TYPE", "canonical_host")

USER_TYPE: Final = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        # Kafka's KafkaPrincipal.toString, the form ACLs and super.users are written in.
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def from_string(cls, text: str) -> KafkaPrincipal:
        """Kafka's SecurityUtils.parseKafkaPrincipal: "Type:name", split at the first colon."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"expected a principal of the form Type:name, got {text!r}")
        return cls(principal_type, name)


ANONYMOUS: Final = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One connection's identity, the same object for all its requests (no per-request work)."""

    principal: KafkaPrincipal
    listener_name: str  # e.g. "PLAINTEXT", "SASL_SSL", or a named listener such as "CLIENT"
    security_protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    client_host: str  # the peer's IP address (canonical_host), what an ACL's host is compared with


@functools.lru_cache(maxsize=4096)
def canonical_host(host: str) -> str:
    """One spelling per IP address, so that an ACL's host and a client's address compare as
    addresses: `::1`, `[::1]` and `0:0:0:0:0:0:0:1` are one host, and an IPv4-mapped IPv6 peer
    (`::ffff:10.0.0.1`, an IPv4 client of a dual-stack listener) is its IPv4 address.

    Kafka compares the ACL's string with Java's InetAddress.getHostAddress(), which turns a mapped
    peer into its IPv4 address too but writes IPv6 in full, so there only `0:0:0:0:0:0:0:1` matches
    ::1; every ACL that matches in Kafka matches here, and so does the short form operators write.
    A name that is not an address (`*`, a host name) stays as written: it matches only itself."""
    try:
        address = ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


# What handler unit tests pass when they do not care who asks.
LOCAL_ANONYMOUS: Final = Session(principal=ANONYMOUS, listener_name="PLAINTEXT", security_protocol="PLAINTEXT",
                                 client_host="127.0.0.1")
