"""docs/architecture.md names files a newcomer opens: each must exist, or the page is out of date."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
# a path of ours: starts with one of our top-level folders and ends in a file name or a slash
NAMED = re.compile(r"\b((?:broker|coordinator|storage|protocol|tests|docs)/[\w/]*(?:\.\w+|/))")


def test_every_file_the_page_names_exists() -> None:
    named = set(NAMED.findall(DOC.read_text()))
    assert len(named) > 30
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
