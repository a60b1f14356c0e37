"""Imports point one way: broker -> coordinator -> storage -> protocol (asyncpg runs its linters as
tests; this is the one architectural rule checked the same way). Every import counts, at module
level or lazily inside a function, absolute or relative. protocol/ is also sans-I/O (no asyncio,
socket, selectors or uvloop), and only protocol/ touches kio's serializers (kio.serial). pipeline/, bench/
and tests/ may import anything, but no layer may import them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Lowest first: a package may import only those before it.
LAYERS = ("protocol", "storage", "coordinator", "broker")
OUTSIDE = {"pipeline", "bench", "tests"}  # may import the layers, never the other way round
IO_MODULES = {"asyncio", "socket", "selectors", "uvloop"}
MODULES = sorted(p.relative_to(REPO).as_posix() for layer in LAYERS for p in (REPO / layer).glob("**/*.py"))


def imported_modules(path: Path, module: str) -> set[str]:
    """Dotted names of everything `module` (dotted, at `path`) imports, relative imports resolved;
    a relative import that climbs above the top-level package yields ".."."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            elif node.level > len(package):
                found.add("..")
                continue
            else:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            # `from pkg import name` may import the submodule pkg.name: both count
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def violations(rel_path: str, root: Path = REPO) -> list[str]:
    path = root / rel_path
    module = rel_path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    layer = module.split(".")[0]
    allowed_below = set(LAYERS[:LAYERS.index(layer) + 1])
    bad = []
    for name in sorted(imported_modules(path, module)):
        top = name.split(".")[0]
        if name == "..":
            bad.append("a relative import above the top-level package")
        elif top in OUTSIDE or (top in LAYERS and top not in allowed_below):
            bad.append(f"{layer} imports {name}")
        elif layer == "protocol" and top in IO_MODULES:
            bad.append(f"protocol (sans-I/O) imports {name}")
        elif name.startswith("kio.serial") and layer != "protocol":
            bad.append(f"{layer} imports {name}: only protocol/ may use kio's serializers")
    return bad


def test_there_are_modules_in_every_layer():
    for layer in LAYERS:
        assert sum(m.startswith(layer + "/") for m in MODULES) >= 3, layer


@pytest.mark.parametrize("rel_path", MODULES)
def test_imports_point_down_the_layers(rel_path):
    assert violations(rel_path) == []


BAD_MODULES = {
    # each form of import, each wrong direction
    "protocol/a.py": ("import asyncio.tasks\nfrom storage.api import X\n", {"asyncio", "storage"}),
    "protocol/b.py": ("from ... import broker\n", {"relative"}),
    "protocol/c.py": ("def f():\n    import socket\n", {"socket"}),
    "storage/d.py": ("from coordinator.transaction import state\n", {"coordinator"}),
    "storage/e.py": ("async def f():\n    from broker.config import BrokerConfig\n", {"broker"}),
    "coordinator/sub/f.py": ("class C:\n    def m(self):\n        from broker.dispatch import HANDLERS\n", {"broker"}),
    "coordinator/g.py": ("from tests.broker_process import BrokerProcess\n", {"tests"}),
    "broker/h.py": ("import pipeline.job\n", {"pipeline"}),
    "broker/i.py": ("from kio.serial import entity_reader\n", {"kio.serial"}),
}


@pytest.mark.parametrize("rel_path", sorted(BAD_MODULES))
def test_the_check_catches_each_form(tmp_path, rel_path):
    source, words = BAD_MODULES[rel_path]
    (tmp_path / rel_path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel_path).write_text(source)
    found = " ".join(violations(rel_path, tmp_path))
    assert all(w in found for w in words), found


def test_downward_and_sibling_imports_pass(tmp_path):
    (tmp_path / "broker/handlers").mkdir(parents=True)
    (tmp_path / "broker/handlers/x.py").write_text(
        "import asyncio\nfrom ..config import C\nfrom coordinator.group import g\nfrom storage import api\n"
        "from protocol.errors import ErrorCode\nfrom kio.schema.metadata.v12 import request\n")
    assert violations("broker/handlers/x.py", tmp_path) == []
