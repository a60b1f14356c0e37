"""The partition lock between processes: refused while another process holds
it, also while that process is paused (SIGSTOP), and free once it is killed (SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from storage.embedded.partition_lock import PartitionLock
from tests.supervised import REPO

HOLDER = """
import sys, time
from pathlib import Path
from storage.embedded.partition_lock import PartitionLock
lock = PartitionLock(Path(sys.argv[1]), "t-0")
assert lock.acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_a_paused_holder_keeps_the_partition_until_it_is_killed(tmp_path: Path) -> None:
    part = tmp_path
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(part)], cwd=REPO, stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        mine = PartitionLock(part, "t-0")
        assert not mine.acquire()
        holder.send_signal(signal.SIGSTOP)
        assert not mine.acquire()  # paused, it still holds it: no second writer
        holder.kill()
        holder.wait(30)
        assert mine.acquire() and mine.held
        mine.release()
        assert PartitionLock(part, "t-0").acquire()
        assert PartitionLock(part, "t-1").acquire()  # one lock per partition
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
