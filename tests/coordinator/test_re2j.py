"""coordinator/re2j.py reads patterns as RE2/J (Kafka's com.google.re2j) does. Each case is a
pattern and the subjects it is tried on, with what re2j 1.8's Pattern.compile(p).matcher(s)
.matches() answered (None: PatternSyntaxException); tests/e2e/test_re2j_java.py runs the same
cases through re2j itself, so the table cannot drift from it."""

from __future__ import annotations

import pytest

from coordinator.re2j import Re2jSyntaxError, compile_re2j

# (pattern, {subject: matches}) or (pattern, None) where RE2/J refuses the pattern.
CASES: list[tuple[str, dict[str, bool] | None]] = [
    ("app-.*", {"app-1": True, "xapp-1": False, "app-": True}),
    (".*-(prod|stage)", {"a-prod": True, "a-dev": False}),
    ("tx-[0-9]{1,3}", {"tx-12": True, "tx-1234": False}),
    # Python accepts all of these; RE2/J does not.
    ("a(?=b)", None), ("a(?!b)", None), ("(?<=a)b", None), ("(?<!a)b", None), ("(a)\\1", None),
    ("(?P<n>a)(?P=n)", None), ("(?#c)a", None), ("(?>a)", None), ("a*+", None), ("a++", None), ("a?+", None),
    ("a{1,2}+", None), ("a*??", None), ("a{2}{3}", None), ("a**", None), ("x{1001}", None), ("a{3,2}", None),
    ("a\\Z", None), ("\\u0041", None), ("\\e", None), ("\\h", None), ("\\G", None), ("\\C", None), ("\\E", None),
    ("\\8", None), ("[\\Q]\\E]", None), ("*", None), ("(a", None), ("a)", None), ("[a", None),
    # Read differently by Python unless translated.
    ("\\d", {"\u0663": False, "3": True}), ("\\w+", {"\u00e9": False, "e_1": True}),
    ("\\s", {" ": True, "\v": False}), ("\\S", {"x": True}), ("[\\s]", {" ": True}), ("[\\d]", {"5": True}),
    ("a\\z", {"a": True}), ("a{,2}", {"a{,2}": True, "aa": False}), ("a{,}", {"a{,}": True}),
    ("a{x}", {"a{x}": True}), ("a{1,}", {"aaa": True}), ("a{0}", {"": True}), ("a{1000}", {"a": False}),
    ("\\Qa.b\\E", {"a.b": True, "axb": False}), ("\\Qa", {"a": True}), ("\\x{41}", {"A": True}),
    ("\\x41", {"A": True}), ("(?<name>a)", {"a": True}), ("(?P<n>a)", {"a": True}),
    ("a(?i)b", {"aB": True, "AB": False}), ("(a(?i)b)c", {"aBc": True, "aBC": False}),
    ("(?i)APP", {"app": True}), ("(?i:a)b", {"Ab": True, "AB": False}), ("(?-i)a", {"a": True}),
    ("(?i)\u00e9", {"\u00c9": True}), ("[[:digit:]]+", {"123": True, "a": False}),
    ("[[:alpha:]_]+", {"ab_C": True, "a1": False}), ("[a&&b]", {"&": True}), ("[a~~b]", {"~": True}),
    ("[[a]", {"[": True}), ("[a|b]", {"|": True}), ("[a-]", {"-": True}), ("[]a]", {"]": True}),
    ("[^]a]", {"b": True, "]": False}), ("\\_", {"_": True}), ("\\ ", {" ": True}), ("a\\.b", {"a.b": True}),
    ("\\\u00e9", {"\u00e9": True}), ("\u00e9", {"\u00e9": True}), ("a|", {"": True}), ("()", {"": True}),
    ("x*?", {"x": True}), ("(?s:.)", {"a": True}), ("\\0", {"\0": True}), ("\\b", {"": False}),
]


@pytest.mark.parametrize(("pattern", "expected"), CASES, ids=[p for p, _ in CASES])
def test_patterns_read_as_re2j_reads_them(pattern: str, expected: dict[str, bool] | None) -> None:
    if expected is None:
        with pytest.raises(Re2jSyntaxError, match="^error parsing regexp: "):
            compile_re2j(pattern)
        return
    compiled = compile_re2j(pattern)
    assert {s: compiled.fullmatch(s) is not None for s in expected} == expected


@pytest.mark.parametrize("pattern", ["\\pL", "\\p{Greek}", "[\\PL]", "[[:^alpha:]]", "(?U)a+"])
def test_what_python_cannot_say_is_refused_with_why(pattern: str) -> None:
    """RE2/J accepts these; they are refused as not served rather than read wrongly."""
    with pytest.raises(Re2jSyntaxError, match="not served by this broker"):
        compile_re2j(pattern)


def test_re2j_messages_name_the_offending_text() -> None:
    for pattern, message in [("a(?=b)", "invalid or unsupported Perl syntax: `(?=`"),
                             ("(a)\\1", "invalid escape sequence: `\\1`"),
                             ("a*+", "invalid nested repetition operator: `*+`"),
                             ("x{1001}", "invalid repeat count: `{1001}`")]:
        with pytest.raises(Re2jSyntaxError) as raised:
            compile_re2j(pattern)
        assert str(raised.value) == f"error parsing regexp: {message}"
