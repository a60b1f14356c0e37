"""coordinator/re2j.py against re2j itself: every case of tests/coordinator/test_re2j.py, run
through com.google.re2j (the jar Kafka 4.4.0's tools ship, which its broker compiles patterns
with), must be refused or matched alike, so that table is what RE2/J answers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.broker_process import REPO
from tests.coordinator.test_re2j import CASES
from tests.e2e.test_java_clients import compile_java

pytestmark = pytest.mark.e2e


def test_the_case_table_is_what_re2j_answers(tmp_path: Path) -> None:
    tools = REPO / "tools" / "kafka-tools"
    jars = [j for j in sorted(tools.glob("*.jar")) if j.name.startswith(("re2j-", "kafka-clients-"))]
    if not any(j.name.startswith("re2j-") for j in jars):
        pytest.fail("tools/kafka-tools/re2j-*.jar is missing: run `make kafka-tools`")
    classpath = compile_java(tmp_path, Path(__file__).parent / "java" / "Re2jCheck.java", jars)
    lines = ["\t".join(s.encode().hex() for s in (pattern, *(expected or {}))) for pattern, expected in CASES]
    proc = subprocess.run(["java", "-cp", classpath, "Re2jCheck"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=120, check=True)
    answers = proc.stdout.splitlines()
    assert len(answers) == len(CASES), proc.stdout + proc.stderr
    for (pattern, expected), answer in zip(CASES, answers, strict=True):
        want = "ERR" if expected is None else " ".join(["OK", *(str(m).lower() for m in expected.values())])
        assert answer == want, f"re2j reads {pattern!r} as {answer}, the table says {want}"
