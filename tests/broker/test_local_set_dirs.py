"""A local set's data dir and a single broker's are not interchangeable (docs/processes.md): each
refuses the other's in one line, before anything is written there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.supervised import REPO, free_ports


def broker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker", "--host", "127.0.0.1", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_a_single_broker_refuses_a_sets_data_dir(tmp_path: Path) -> None:
    (tmp_path / "cluster.db").write_bytes(b"")
    done = broker("--port", "0", "--data-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (f"eosbroker: {tmp_path} is the data dir of a set of broker processes (cluster.db): "
                           "start it with the --processes it was started with\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.db"]


def test_a_set_refuses_a_single_brokers_data_dir(tmp_path: Path) -> None:
    (tmp_path / "topics.json").write_text('{"version": 1, "topics": []}')
    done = broker("--processes", "2", "--port", str(free_ports(2)), "--data-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"eosbroker: {tmp_path} is a single broker's data dir (topics.json): a set of processes cannot " \
           "share it; start it without --processes" in done.stderr
    assert "failed to start (exit status 2); stopping the others" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topics.json"]
