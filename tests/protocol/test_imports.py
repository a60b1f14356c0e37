"""protocol/ is sans-I/O: it imports no asyncio or socket and no sibling package (asyncpg runs its
linters as tests; this is the one rule we check the same way)."""

import ast
from pathlib import Path

import pytest

PROTOCOL = Path(__file__).resolve().parents[2] / "protocol"
FORBIDDEN = {"asyncio", "socket", "selectors", "uvloop", "broker", "coordinator", "storage"}
MODULES = sorted(PROTOCOL.glob("**/*.py"))


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level > 1:
            roots.add("..")  # reaching above protocol/ means a sibling package
    return roots


def test_there_are_modules_to_check():
    assert len(MODULES) >= 5


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_io_or_sibling_imports(path):
    assert imported_roots(path) & (FORBIDDEN | {".."}) == set()


def test_the_check_catches_each_form(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import asyncio.tasks\nfrom storage.api import X\nfrom ..broker import y\n"
                   "def f():\n    import socket\n")
    assert imported_roots(bad) >= {"asyncio", "storage", "..", "socket"}
