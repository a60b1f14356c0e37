"""An SSL client's principal: its certificate subject in RFC 2253 form (x500.py), mapped by
ssl.principal.mapping.rules as Kafka's SslPrincipalMapper maps it: a comma-separated list of
DEFAULT (the subject unchanged) and RULE:pattern/replacement/[LU] (the first rule whose pattern
matches the whole subject gives the name, lower- or upper-cased when L or U follows)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from ..principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from .x500 import rfc2253_name

__all__ = ("NoMatchingRule", "SslPrincipalMapper", "peer_principal")

_RULE: Final = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)"
_SPLITTER: Final = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER: Final = re.compile(_RULE)
_BACK_REFERENCE: Final = re.compile(r"\$(\d+)")


class NoMatchingRule(Exception):
    """No rule of ssl.principal.mapping.rules applies to a subject (Kafka closes the connection)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        name = self.pattern.sub(self.replacement, subject)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class SslPrincipalMapper:
    def __init__(self, rules: str) -> None:
        self.rules = [self._parse(text) for text in self._split(rules)]

    @staticmethod
    def _split(rules: str) -> list[str]:
        text, pos, out = rules.strip(), 0, []
        while pos < len(text):
            m = _SPLITTER.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(f"Invalid rule: {text[pos:]}")
            out.append(m.group(1))
            pos = m.end()
        return out

    @staticmethod
    def _parse(text: str) -> _Rule:
        m = _PARSER.fullmatch(text)
        if m is None:
            raise ValueError(f"Invalid rule: {text}")
        if m.group(1):
            return _Rule(None)
        # Java's replaceAll writes back-references as $1; Python's as \g<1>.
        replacement = _BACK_REFERENCE.sub(r"\\g<\1>", m.group(3).replace("\\", "\\\\"))
        return _Rule(re.compile(m.group(2)), replacement, m.group(4))

    def name(self, subject: str) -> str:
        for rule in self.rules:
            if (name := rule.apply(subject)) is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {subject}")


# Dynamic: ssl.SSLObject or the acceptor's AlertingSSLObject.
def peer_principal(ssl_object: Any, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """User:<mapped subject> of a verified client certificate; User:ANONYMOUS without one."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    from cryptography import x509

    subject = x509.load_der_x509_certificate(der).subject.public_bytes()
    return KafkaPrincipal(USER_TYPE, mapper.name(rfc2253_name(subject)))
