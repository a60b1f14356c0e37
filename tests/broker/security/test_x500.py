"""Certificate subjects in Java's X500Principal.getName() form (RFC 2253), so SSL principals match
the ACLs Kafka operators already wrote. Expected strings are what Java prints for these names."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import NameOID, ObjectIdentifier

from broker.security.x500 import rfc2253_name


def _der(*rdns: list[tuple[ObjectIdentifier, str]]) -> bytes:
    return x509.Name([x509.RelativeDistinguishedName([x509.NameAttribute(o, v) for o, v in rdn])
                      for rdn in rdns]).public_bytes()


def test_most_specific_first_with_java_keywords() -> None:
    der = _der([(NameOID.COUNTRY_NAME, "GB")], [(NameOID.STATE_OR_PROVINCE_NAME, "London")],
               [(NameOID.LOCALITY_NAME, "City")], [(NameOID.ORGANIZATION_NAME, "Acme")],
               [(NameOID.ORGANIZATIONAL_UNIT_NAME, "Payments")], [(NameOID.COMMON_NAME, "alice")])
    assert rfc2253_name(der) == "CN=alice,OU=Payments,O=Acme,L=City,ST=London,C=GB"


def test_special_characters_are_escaped_as_java_does() -> None:
    der = _der([(NameOID.ORGANIZATION_NAME, 'Acme, Inc. + "Co" <a=b>; #1\\')], [(NameOID.COMMON_NAME, " bob ")])
    assert rfc2253_name(der) == 'CN=\\ bob\\ ,O=Acme\\, Inc. \\+ \\"Co\\" \\<a\\=b\\>\\; \\#1\\\\'


def test_attributes_without_a_keyword_are_oid_and_hex_der() -> None:
    der = _der([(NameOID.EMAIL_ADDRESS, "a@b.c")], [(NameOID.COMMON_NAME, "alice")])
    # emailAddress is an IA5String (tag 0x16) of 5 bytes.
    assert rfc2253_name(der) == "CN=alice,1.2.840.113549.1.9.1=#16056140622e63"


def test_multi_valued_rdn_and_domain_components() -> None:
    der = _der([(NameOID.DOMAIN_COMPONENT, "com")], [(NameOID.DOMAIN_COMPONENT, "example")],
               [(NameOID.COMMON_NAME, "svc"), (NameOID.USER_ID, "42")])
    assert rfc2253_name(der) == "CN=svc+UID=42,DC=example,DC=com"


def test_non_ascii_values_stay_as_they_are() -> None:
    assert rfc2253_name(_der([(NameOID.COMMON_NAME, "Zoë")])) == "CN=Zoë"
