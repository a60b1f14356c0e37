"""A certificate subject as Java's X500Principal.getName() writes it (RFC 2253), which is what
Kafka's DefaultKafkaPrincipalBuilder makes an SSL client's principal from: "User:CN=alice,O=Acme".
Existing ACLs name principals in this form, so it must match Java's output exactly:

- RDNs from last to first, joined by ","; the attributes of a multi-valued RDN joined by "+";
- the keywords CN, C, L, ST, O, OU, STREET, DC and UID (Java's RFC 2253 set); any other attribute
  is its dotted OID and "#" plus the lower-case hex of its DER value (emailAddress included);
- in values, each of , = + < > # ; " \\ gets a backslash, NUL is \\00, and leading or trailing
  spaces are escaped (Java's AVA.toRFC2253String).

The subject is read from the DER of the certificate's Name, so each value's string type and bytes
are the certificate's own.
"""

from __future__ import annotations

from typing import Final

__all__ = ("rfc2253_name",)

_KEYWORDS: Final = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
    "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}
_ESCAPED: Final = frozenset(',=+<>#;"\\')
# DER string types and how their bytes decode.
_STRING_CODECS: Final = {12: "utf-8", 18: "ascii", 19: "ascii", 20: "latin-1", 22: "ascii", 26: "ascii",
                         28: "utf-32-be", 30: "utf-16-be"}
_SEQUENCE, _SET, _OID = 0x30, 0x31, 0x06


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `pos`."""
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first < 0x80:
        return tag, pos, pos + first
    count = first & 0x7F
    length = int.from_bytes(data[pos:pos + count], "big")
    return tag, pos + count, pos + count + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, element start, content start, content end) of each element in data[start:end]."""
    out = []
    while start < end:
        tag, content, stop = _tlv(data, start)
        out.append((tag, start, content, stop))
        start = stop
    return out


def _oid(content: bytes) -> str:
    first, value = content[0], 0
    arcs: list[int] = []
    arcs.extend(divmod(first, 40) if first < 80 else (2, first - 80))
    for byte in content[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    return ".".join(str(a) for a in arcs)


def _escape(value: str) -> str:
    out = "".join("\\00" if c == "\0" else "\\" + c if c in _ESCAPED else c for c in value)
    lead = len(out) - len(out.lstrip(" \r"))
    trail = len(out) - len(out.rstrip(" \r"))
    if lead == len(out):
        return "".join("\\" + c for c in out)
    middle = out[lead:len(out) - trail]
    return "".join("\\" + c for c in out[:lead]) + middle + "".join("\\" + c for c in out[len(out) - trail:])


def _attribute(der: bytes, start: int, end: int) -> str:
    (_, _, oid_start, oid_end), (tag, value_start, content, value_end) = _children(der, start, end)[:2]
    oid = _oid(der[oid_start:oid_end])
    keyword = _KEYWORDS.get(oid)
    codec = _STRING_CODECS.get(tag)
    if keyword is None or codec is None:
        return f"{keyword or oid}=#{der[value_start:value_end].hex()}"
    return f"{keyword}={_escape(der[content:value_end].decode(codec))}"


def rfc2253_name(name_der: bytes) -> str:
    """The RFC 2253 string of a DER-encoded X.500 Name (a certificate's subject)."""
    tag, start, end = _tlv(name_der, 0)
    if tag != _SEQUENCE:
        raise ValueError("not a DER X.500 Name")
    rdns = []
    for rdn_tag, _, rdn_start, rdn_end in _children(name_der, start, end):
        if rdn_tag != _SET:
            raise ValueError("not a DER X.500 Name")
        rdns.append("+".join(_attribute(name_der, s, e) for _, _, s, e in _children(name_der, rdn_start, rdn_end)))
    return ",".join(reversed(rdns))
