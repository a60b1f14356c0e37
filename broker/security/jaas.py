"""Kafka's sasl.jaas.config values, parsed as Kafka's JaasConfig parses them (java.io.StreamTokenizer):

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice='alice secret';

one or more entries of a login module, a control flag (required, requisite, sufficient, optional)
and key=value options, each entry ended by ";"; values are words or quoted with " or ' (backslash
escapes), and // and /* */ comments are skipped. A value that starts with a digit must be quoted,
as in Kafka. Errors carry Kafka's messages and never the option values (they may be passwords).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

__all__ = ("JaasEntry", "JaasError", "parse_jaas_config")

_FLAGS: Final = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class JaasError(ValueError):
    """A sasl.jaas.config value Kafka would refuse."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def _word_char(c: str, first: bool) -> bool:
    return c.isalpha() or c in "_$-" or ord(c) >= 0xA0 or (not first and (c.isdigit() or c == "."))


def _quoted(text: str, pos: int) -> tuple[str, int]:
    quote, out, pos = text[pos], [], pos + 1
    while pos < len(text) and text[pos] != quote and text[pos] != "\n":
        c = text[pos]
        if c == "\\" and pos + 1 < len(text):
            pos += 1
            c = _ESCAPES.get(text[pos], text[pos])
        out.append(c)
        pos += 1
    return "".join(out), pos + 1


def _skip_comment(text: str, pos: int) -> int | None:
    if text.startswith("//", pos):
        end = text.find("\n", pos)
        return len(text) if end < 0 else end + 1
    if text.startswith("/*", pos):
        end = text.find("*/", pos + 2)
        return len(text) if end < 0 else end + 2
    return None


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    """(kind, value): kind is "word" (words and quoted strings), "=", ";" or "other"."""
    pos = 0
    while pos < len(text):
        c = text[pos]
        if c.isspace():
            pos += 1
        elif (after := _skip_comment(text, pos)) is not None:
            pos = after
        elif c in "\"'":
            value, pos = _quoted(text, pos)
            yield "word", value
        elif _word_char(c, first=True):
            start = pos
            while pos < len(text) and _word_char(text[pos], first=False):
                pos += 1
            yield "word", text[start:pos]
        else:
            yield (c if c in "=;" else "other"), c
            pos += 1


def _entry(module: str, tokens: Iterator[tuple[str, str]]) -> JaasEntry:
    kind, flag = next(tokens, ("eof", ""))
    if kind == "eof":
        raise JaasError("Login module control flag not specified in JAAS config")
    if kind != "word" or flag.upper() not in _FLAGS:
        raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
    options: dict[str, str] = {}
    for kind, key in tokens:
        if kind == ";":
            return JaasEntry(module, flag.upper(), options)
        equals, (value_kind, value) = next(tokens, ("eof", "")), next(tokens, ("eof", ""))
        if equals[0] != "=" or value_kind != "word":
            raise JaasError(f"Value not specified for key '{key}' in JAAS config")
        options[key] = value
    raise JaasError("JAAS config entry not terminated by semi-colon")


def parse_jaas_config(text: str) -> list[JaasEntry]:
    tokens = _tokens(text)
    entries = [_entry(module, tokens) for _, module in tokens]
    if not entries:
        raise JaasError("Login module not specified in JAAS config")
    return entries
