"""Kafka's regular expressions (com.google.re2j, RE2 syntax) run on Python's `re`.

Kafka compiles client patterns with RE2/J (ListTransactions' TransactionalIdPattern, KIP-1152;
KIP-848's SubscribedTopicRegex) and full-matches them (Matcher.matches()). Python's `re` reads
most RE2 patterns alike; where they differ, this rewrites the pattern or refuses it as RE2/J does,
checked case by case against re2j 1.8 (tests/coordinator/test_re2j.py):
- refused by RE2/J, accepted by Python: backreferences (\\1), lookaround, atomic groups, comments
  and (?P=name) ("invalid or unsupported Perl syntax"); possessive and stacked repetitions (a*+,
  a{2}{3}: "invalid nested repetition operator"); counts over 1000; escapes RE2 lacks (\\Z, \\u,
  \\N, \\G, \\h, \\e, \\C).
- read differently: \\d, \\w, \\s and \\b are ASCII-only in RE2 (\\s without \\v; inside a class
  \\D, \\W and \\S stay Python's, which differ only for non-ASCII digits, letters and spaces);
  \\Q...\\E quotes; \\z is the end of text; `{` that is no valid repetition ({,2}) is a literal
  brace, which Python would read as {0,2}; (?<name>) is a named group; a flag group such as (?i)
  inside the pattern applies to the rest of its group (Python allows global flags only at the start);
  [[:alpha:]] is a POSIX class; `[`, `&`, `~` and `|` inside a class are literals.
- not served: Unicode classes (\\pL, \\p{Greek}), negated POSIX classes and the ungreedy flag U,
  which Python's `re` has no way to say: refused with a message saying so, rather than read wrongly.
"""

from __future__ import annotations

import re
import warnings
from typing import Final

__all__ = ("Re2jSyntaxError", "compile_re2j")

_MAX_REPEAT: Final = 1000
_REPEAT: Final = re.compile(r"\{(\d+)(,(\d*))?\}")
_ESCAPES: Final = frozenset("afntrv0123456789xdDsSwWbBAzpPQ")  # letters and digits RE2 knows after `\`
_SPACE: Final = r"\t\n\f\r "  # RE2's \s
# RE2's Perl classes are ASCII-only; Python's are Unicode unless asked (re.ASCII would also make
# (?i) ASCII-only, where RE2 folds é and É). The negated ones inside a class stay Python's.
_PERL: Final = {"d": "[0-9]", "D": "[^0-9]", "w": "[0-9A-Za-z_]", "W": "[^0-9A-Za-z_]", "s": f"[{_SPACE}]",
                "S": f"[^{_SPACE}]", "b": r"(?a:\b)", "B": r"(?a:\B)", "z": r"\Z"}
_PERL_IN_CLASS: Final = {"d": "0-9", "w": "0-9A-Za-z_", "s": _SPACE}
_POSIX: Final = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": r"\x00-\x7f", "blank": r"\t ", "cntrl": r"\x00-\x1f\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": r"!-/:-@\[-`{-~",
    "space": _SPACE + r"\v", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_GROUP_FLAGS: Final = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)([:)])")


class Re2jSyntaxError(ValueError):
    """The pattern is not one RE2/J compiles (or one this translation cannot serve)."""


def compile_re2j(pattern: str) -> re.Pattern[str]:
    """`pattern` as RE2/J reads it; use fullmatch() for Kafka's matches()."""
    translated = _Translator(pattern).run()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(translated)
    except (re.error, FutureWarning) as exc:
        raise Re2jSyntaxError(f"error parsing regexp: {exc}") from None


def _invalid(what: str, text: str) -> Re2jSyntaxError:
    return Re2jSyntaxError(f"error parsing regexp: {what}: `{text}`")


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.pos = 0
        self.out: list[str] = []
        self.closers: list[int] = [0]  # per open group: flag groups opened inside it, closed with it
        self.repeated = False  # the last item was a repetition: another one is "nested"

    def run(self) -> str:
        while self.pos < len(self.src):
            self.step()
        self.out.append(")" * self.closers[-1])
        return "".join(self.out)

    def step(self) -> None:
        c = self.src[self.pos]
        repeated, self.repeated = self.repeated, False
        if c in "*+?" or (c == "{" and _REPEAT.match(self.src, self.pos)):
            self.repetition(c, repeated)
        elif c == "\\":
            self.out.append(self.escape(in_class=False))
        elif c == "[":
            self.char_class()
        elif c == "(":
            self.group()
        elif c == ")":
            self.out.append(")" * self.closers.pop() + ")")
            self.pos += 1
            if not self.closers:
                raise _invalid("unexpected )", self.src)
        else:
            self.out.append(re.escape(c) if c in "{}" else c)
            self.pos += 1

    def repetition(self, c: str, repeated: bool) -> None:
        if c == "{":
            m = _REPEAT.match(self.src, self.pos)
            assert m is not None
            op, counts = m.group(0), [int(n) for n in (m.group(1), m.group(3)) if n]
            if any(n > _MAX_REPEAT for n in counts) or (len(counts) == 2 and counts[0] > counts[1]):
                raise _invalid("invalid repeat count", op)
        else:
            op = c
        if repeated:
            raise _invalid("invalid nested repetition operator", self.out[-1] + op)
        self.pos += len(op)
        if self.src.startswith("?", self.pos):  # non-greedy: one `?`, still one repetition
            op += "?"
            self.pos += 1
        self.out.append(op)
        self.repeated = True

    def escape(self, in_class: bool) -> str:
        start = self.pos
        c = self.src[self.pos + 1:self.pos + 2]
        if not c:
            raise _invalid("trailing backslash at end of expression", "")
        self.pos += 2
        if (c.isascii() and c.isalnum() and c not in _ESCAPES) or (c in "123456789" and not in_class):
            raise _invalid("invalid escape sequence", "\\" + c)
        if c == "Q":
            if in_class:
                raise _invalid("invalid escape sequence", "\\Q")
            end = self.src.find("\\E", self.pos)
            end = len(self.src) if end < 0 else end
            quoted, self.pos = self.src[self.pos:end], min(end + 2, len(self.src))
            return "".join(re.escape(ch) for ch in quoted)
        if c in "pP":
            raise Re2jSyntaxError(f"Unicode classes such as `{self.src[start:start + 3]}` are not served by this "
                                  "broker's regular expressions")
        if c == "x" and self.src.startswith("{", self.pos):
            end = self.src.find("}", self.pos)
            digits = self.src[self.pos + 1:end] if end > 0 else ""
            if not digits or any(ch not in "0123456789abcdefABCDEF" for ch in digits) or int(digits, 16) > 0x10FFFF:
                raise _invalid("invalid escape sequence", self.src[start:end + 1 if end > 0 else len(self.src)])
            self.pos = end + 1
            return re.escape(chr(int(digits, 16)))
        return (_PERL_IN_CLASS if in_class else _PERL).get(c, "\\" + c)

    def char_class(self) -> None:
        self.out.append("[")
        self.pos += 1
        if self.src.startswith("^", self.pos):
            self.out.append("^")
            self.pos += 1
        first = True
        while self.pos < len(self.src):
            c = self.src[self.pos]
            if c == "]" and not first:
                self.out.append("]")
                self.pos += 1
                return
            first = False
            if c == "\\":
                self.out.append(self.escape(in_class=True))
            elif c == "[" and self.src.startswith("[:", self.pos):
                self.out.append(self.posix_class())
            else:
                self.out.append("\\" + c if c in "[&~|]" else c)
                self.pos += 1
        raise _invalid("missing closing ]", self.src[self.src.rfind("[", 0, self.pos):])

    def posix_class(self) -> str:
        end = self.src.find(":]", self.pos + 2)
        name = self.src[self.pos + 2:end] if end > 0 else ""
        if name.startswith("^"):
            raise Re2jSyntaxError(f"negated POSIX classes such as `[:{name}:]` are not served by this "
                                  "broker's regular expressions")
        if name not in _POSIX:
            raise _invalid("invalid character class range", f"[:{name}:]")
        self.pos = end + 2
        return _POSIX[name]

    def group(self) -> None:
        src, pos = self.src, self.pos
        if not src.startswith("(?", pos):
            opener = written = "("
        elif src.startswith(("(?:", "(?P<"), pos):
            opener = written = "(?:" if src[pos + 2] == ":" else "(?P<"
        elif src.startswith("(?<", pos) and src[pos + 3:pos + 4] not in ("=", "!"):
            opener, written = "(?<", "(?P<"  # RE2's other spelling of a named group
        elif (m := _GROUP_FLAGS.match(src, pos)) and m.group(1) not in ("", "-"):
            self.flags(m)
            return
        elif src.startswith("(?<", pos):  # lookbehind
            raise _invalid("invalid named capture", src[pos:])
        else:
            raise _invalid("invalid or unsupported Perl syntax", src[pos:pos + 3])
        self.out.append(written)
        self.pos += len(opener)
        self.closers.append(0)

    def flags(self, m: re.Match[str]) -> None:
        if "U" in m.group(1):
            raise Re2jSyntaxError("the ungreedy flag (?U) is not served by this broker's regular expressions")
        self.pos = m.end()
        if m.group(2) == ":":
            self.out.append(m.group(0))
            self.closers.append(0)
        else:
            # RE2 applies (?i) to the rest of the enclosing group; Python only at the very start.
            self.out.append(f"(?{m.group(1)}:")
            self.closers[-1] += 1
