"""Replacing old segments by cleaned ones so that a crash at any moment leaves one or the other.

The worker process leaves each cleaned segment's files (.log, .index, .timeindex, .txnindex) in
<partition>/cleaner-tmp/. The swap then:
  1. writes <partition>/cleaner-swap.json (atomically: written, fsynced, renamed) naming, per cleaned
     segment, the old segments it replaces: the commit point;
  2. moves each cleaned file over the old segment of the same base offset (rename replaces it
     atomically, the .log last) and removes the other old segments' files;
  3. removes the manifest and the temporary directory.
At open, recover() finishes a swap whose manifest exists (step 2 is idempotent: a file already moved
is no longer in cleaner-tmp/) and otherwise discards cleaner-tmp/ (a pass that had not committed),
as Kafka's .cleaned and .swap files are handled by its LogLoader. Producer snapshots are kept: they
describe producer state at offsets, which cleaning does not change.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ..fs import LOCAL_FS, FileSystem
from .clean_pass import CLEANER_TMP, CleanedGroup, base_name

__all__ = ("MANIFEST", "commit_swap", "discard_tmp", "recover")

log = logging.getLogger(__name__)
MANIFEST: Final = "cleaner-swap.json"
_MOVED: Final = (".index", ".timeindex", ".txnindex", ".log")  # the .log last
_OLD: Final = (".log", ".index", ".timeindex", ".txnindex")


def commit_swap(directory: Path, groups: Sequence[CleanedGroup], fs: FileSystem = LOCAL_FS) -> None:
    """Steps 1 to 3 (worker thread; the owner task has closed the old segments' files)."""
    plan = [{"base": g.base_offset, "replaces": list(g.replaces)} for g in groups]
    fs.write_atomically(directory / MANIFEST, json.dumps({"version": 1, "groups": plan}).encode())
    _finish(directory, plan, fs)


def _finish(directory: Path, plan: Sequence[dict[str, object]], fs: FileSystem) -> None:
    tmp = directory / CLEANER_TMP
    for group in plan:
        base = int(str(group["base"]))
        replaces = group["replaces"]
        assert isinstance(replaces, list)
        for suffix in _MOVED:
            src = tmp / f"{base_name(base)}{suffix}"
            if src.exists():
                fs.replace(src, directory / src.name)
        for old in replaces:
            if int(old) == base:
                continue
            for suffix in _OLD:
                fs.unlink(directory / f"{base_name(int(old))}{suffix}")
    fs.fsync_dir(directory)
    fs.unlink(directory / MANIFEST)
    shutil.rmtree(tmp, ignore_errors=True)
    fs.fsync_dir(directory)


def discard_tmp(directory: Path) -> None:
    shutil.rmtree(directory / CLEANER_TMP, ignore_errors=True)


def recover(directory: Path, fs: FileSystem = LOCAL_FS) -> None:
    """At open, before the segments load: finish a committed swap, or drop an uncommitted pass."""
    manifest = directory / MANIFEST
    if manifest.exists():
        try:
            plan = json.loads(manifest.read_text())["groups"]
        except (ValueError, KeyError) as exc:  # write_atomically never leaves half a manifest
            raise OSError(f"unreadable cleaner manifest {manifest}: {exc}") from exc
        log.warning("%s: finishing a cleaner swap interrupted by a crash (%d segments)", directory.name, len(plan))
        _finish(directory, plan, fs)
    elif (directory / CLEANER_TMP).exists():
        log.info("%s: discarding an unfinished cleaning pass", directory.name)
        discard_tmp(directory)
    for stale in directory.glob(f"{MANIFEST}.tmp"):
        os.unlink(stale)
