"""glibc's malloc set for a broker's request buffers.

Left alone, glibc serves every block of 128 KiB or more from a fresh mapping until one such block
is freed; it then raises that threshold to the freed size and gives the heap's top back to the
kernel whenever twice that is free. A broker allocates and frees buffers of that size on every
request (a 256 KiB produce frame, a 1 MiB fetch response), so requests kept landing on memory the
kernel had to fault in again: 22-30 faults per 256 KiB produce request, ~190 of its ~660 µs of
broker CPU on a 2-core VM (bench.micro). Fixed thresholds keep such buffers on the heap: blocks
under 8 MiB (a frame from 8 MiB on is received into a mapping of its own, protocol/frames.py), and
up to 16 MiB free at the heap's top kept for the next request, which is what glibc's own rule
settles at (twice the mmap threshold) once it has seen an 8 MiB block.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from typing import Final

M_TRIM_THRESHOLD: Final = -1  # glibc's malloc.h
M_MMAP_THRESHOLD: Final = -3
MMAP_THRESHOLD: Final = 8 << 20
TRIM_THRESHOLD: Final = 16 << 20


def tune_malloc(environ: Mapping[str, str] = os.environ) -> bool:
    """Set the thresholds; False, changing nothing, off glibc or when the operator has tuned malloc
    through its environment variables (MALLOC_MMAP_THRESHOLD_, GLIBC_TUNABLES, ...)."""
    if any(name.startswith("MALLOC_") or name == "GLIBC_TUNABLES" for name in environ):
        return False
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return False  # musl and others: their allocators have no such thresholds
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
