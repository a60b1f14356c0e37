"""Crash safety of the cleaner's swap: a crash at every file operation of the swap leaves, after the
next open, exactly the old segments or exactly the cleaned ones (Kafka's .cleaned/.swap recovery)."""

import shutil
from pathlib import Path

import pytest

from storage.cleaner import swap
from storage.cleaner.clean_pass import CLEANER_TMP, run_clean_pass
from storage.fs import FileSystem
from tests.storage.cleaner.helpers import kv, open_log, records


class Crash(Exception):
    """The process dies here (not an OSError: nothing may clean up after it)."""


class CrashingFileSystem(FileSystem):
    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.ops = at, 0

    def _step(self) -> None:
        self.ops += 1
        if self.ops == self.at:
            raise Crash(f"crash at file operation {self.ops}")

    def write(self, fd, data):  # type: ignore[no-untyped-def]
        self._step()
        super().write(fd, data)

    def replace(self, src: Path, dst: Path) -> None:
        self._step()
        super().replace(src, dst)

    def unlink(self, path: Path) -> None:
        self._step()
        super().unlink(path)

    def fsync_dir(self, directory: Path) -> None:
        self._step()
        super().fsync_dir(directory)


async def prepared(directory: Path):  # type: ignore[no-untyped-def]
    """A closed compacted log, its records, and a finished pass waiting in cleaner-tmp/."""
    plog = open_log(directory, segment_bytes=700)
    for i in range(80):
        await plog.append(kv(b"k%d" % (i % 9), b"v%d" % i if i % 11 else None))
    before = await records(plog)
    plan = await plog.plan_cleaning(10_000, 1 << 20)
    assert plan is not None
    result = run_clean_pass(plan.task)
    await plog.close()
    return before, result


async def after_open(directory: Path):  # type: ignore[no-untyped-def]
    plog = open_log(directory, clean=True, segment_bytes=700)
    try:
        return await records(plog), plog.log_end_offset
    finally:
        await plog.close()


async def test_a_crash_anywhere_in_the_swap_leaves_old_or_new_never_a_mixture(tmp_path):
    pristine = tmp_path / "pristine" / "t-0"
    before, result = await prepared(pristine)
    reference = tmp_path / "reference" / "t-0"
    shutil.copytree(pristine, reference)
    swap.commit_swap(reference, result.groups)
    cleaned, end = await after_open(reference)
    assert len(cleaned) < len(before) and end == 80
    outcomes = set()
    for at in range(1, 200):
        directory = tmp_path / f"crash-{at}" / "t-0"
        shutil.copytree(pristine, directory)
        try:
            swap.commit_swap(directory, result.groups, CrashingFileSystem(at))
        except Crash:
            pass
        else:
            break  # every operation has had its crash
        got, end = await after_open(directory)
        assert end == 80
        assert got in (before, cleaned), f"crash at operation {at} left a mixture"
        outcomes.add("old" if got == before else "new")
        assert not (directory / CLEANER_TMP).exists() and not (directory / swap.MANIFEST).exists()
    assert outcomes == {"old", "new"}


@pytest.mark.parametrize("damage", ["missing", "torn"])
async def test_an_unfinished_pass_is_discarded_at_open(tmp_path, damage):
    directory = tmp_path / "t-0"
    before, result = await prepared(directory)
    victim = directory / CLEANER_TMP / f"{result.groups[-1].base_offset:020d}.log"
    if damage == "missing":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[:-7])
    got, _ = await after_open(directory)
    assert got == before
