"""w7's memory figures in cluster mode (issue 33): `python -m bench --cluster --cases w7` against one
broker over a real PostgreSQL server.

RSS sums every process's resident pages, so PostgreSQL's shared_buffers counts once per backend;
the PSS figures count each shared page once, and the per-broker one leaves PostgreSQL out. Only
orders between the figures are asserted, no sizes: PSS below RSS (the backends share pages), one
broker's PSS below the cluster's (PostgreSQL's is in the sum).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.plan import IDLE_PSS, IDLE_PSS_PER_BROKER, W7_KEY

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def w7(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--cluster", "--only", "eosbroker-pg1", "--cases", W7_KEY, "--size", "tiny",
         "--out", str(out), "--idle-settle", "0", "--strict"],
        cwd=REPO, capture_output=True, text=True, timeout=280, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = out.iterdir()
    runs = json.loads((run_dir / "results.json").read_text())["runs"]
    assert [e["case"] for e in runs] == [W7_KEY]  # w7 alone runs no load, not even the warm-up
    metrics: dict[str, float] = runs[0]["metrics"]
    return metrics


def test_idle_pss_counts_postgresql_shared_memory_once(w7: dict[str, float]) -> None:
    assert 0 < w7[IDLE_PSS] < w7["idle RSS MB"]


def test_idle_pss_per_broker_leaves_postgresql_out(w7: dict[str, float]) -> None:
    assert 0 < w7[IDLE_PSS_PER_BROKER] < w7[IDLE_PSS]
