"""broker/, coordinator/, storage/ and protocol/ stay clean under mypy --strict ([tool.mypy] in pyproject.toml;
`make lint` runs the same check)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_mypy_is_clean():
    # from the repository root, where [tool.mypy]'s relative `files` point
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
