"""broker.allocator: glibc keeps request-sized buffers on its heap once the broker has tuned it.

Each check runs in a fresh interpreter: mallopt changes the whole process for good."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Prints whether tune_malloc applied, then how many blocks glibc has mapped on their own
# (mallinfo2().hblks) before and while a 1 MiB buffer, a fetch response's size, is held.
PROBE = """
import ctypes, sys
from broker.allocator import tune_malloc

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
applied = tune_malloc() if sys.argv[1] == "tune" else None
before = libc.mallinfo2().hblks
buffer = bytearray(1 << 20)
print(applied, before, libc.mallinfo2().hblks)
"""

glibc = pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="needs glibc 2.33+")


def probe(mode: str, **env: str) -> tuple[str, int]:
    """(whether tune_malloc applied, blocks glibc mapped for the buffer)"""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], env=clean | env, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2]).stdout
    applied, before, during = out.split()
    return applied, int(during) - int(before)


@glibc
def test_untuned_glibc_maps_a_1_mib_buffer_of_its_own() -> None:
    # The baseline the tuning changes: without it the check below could not fail.
    assert probe("plain") == ("None", 1)


@glibc
def test_tuned_glibc_serves_a_1_mib_buffer_from_its_heap() -> None:
    assert probe("tune") == ("True", 0)


@glibc
def test_the_operators_malloc_settings_win() -> None:
    assert probe("tune", MALLOC_ARENA_MAX="2") == ("False", 1)
    assert probe("tune", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=131072") == ("False", 1)
