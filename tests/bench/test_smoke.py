"""`python -m bench` at the tiny size against eosbroker alone: it runs and writes its files.

No timing is asserted (speed belongs in `make bench`); this only checks that
the harness starts the broker, one case of every load generator completes
against it (`--strict` fails the run otherwise), and the table, the JSON of
every figure and the PNG chart are written. `make bench-smoke` runs every case
at the tiny size, against Kafka too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.plan import CASES, IDLE_PSS, IDLE_PSS_PER_BROKER, PSS_UNDER_W1, W7_KEY

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

# One case of each load generator (bench/load/__main__.py), the one that runs the most of its code,
# and w1-p1 (w7's "RSS under w1 MB" and "PSS under w1 MB" are read during it): t1-sasl-ssl a producer with another
# listener's settings, k2-txn ProducerPerformance with transactions, k3-rc ConsumerPerformance over a
# transactional fill (q1 fills without). The others differ from these in parameters only
# (partitions, batch sizes, producers, the transaction version, the group protocol); each costs a
# load process or a JVM start, seconds under load, so `make bench-smoke` runs them, not `make test`.
SMOKE_CASES = ("w1-p1", "t1-sasl-ssl", "w2-1000rec", "w3", "w4", "w5-8", "w5-java-tv2", "w6", "w8-classic",
               "k2-txn", "k3-rc", "k4-e2e", "t2-handshake", "q1-share-c1", "q2-redelivery")


# The cases above once each, Kafka's JVM tools included (about 1.5 min on an idle 2-core machine,
# several times that when the machine is shared): a generous bound, not a timing.
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--size", "tiny", "--only", "eosbroker", "--cases", ",".join(SMOKE_CASES),
         "--out", str(out), "--idle-settle", "0", "--strict"],
        cwd=REPO, capture_output=True, text=True, timeout=1100, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = out.iterdir()
    return run_dir


def test_writes_table_json_and_png(tiny_run: Path) -> None:
    assert (tiny_run / "chart.png").read_bytes()[:8] == PNG_MAGIC
    data = json.loads((tiny_run / "results.json").read_text())
    assert data["meta"]["brokers"] == ["eosbroker"]
    assert data["meta"]["size"] == "tiny"
    assert "w1-p1" in (tiny_run / "table.txt").read_text()


def test_the_smoke_cases_run_every_load_generator() -> None:
    assert {c.load for c in CASES if c.key in SMOKE_CASES} == {c.load for c in CASES}
    assert set(SMOKE_CASES) <= {c.key for c in CASES}


def test_every_workload_has_an_entry(tiny_run: Path) -> None:
    runs = json.loads((tiny_run / "results.json").read_text())["runs"]
    seen = {e["case"] for e in runs if e["broker"] == "eosbroker"}
    assert seen >= set(SMOKE_CASES) | {W7_KEY}


def test_every_workload_gives_figures(tiny_run: Path) -> None:
    runs = json.loads((tiny_run / "results.json").read_text())["runs"]
    by_case = {e["case"]: e for e in runs}
    memory = by_case[W7_KEY]["metrics"]
    assert set(memory) == {"start-up s", "idle RSS MB", IDLE_PSS, IDLE_PSS_PER_BROKER, "RSS under w1 MB", PSS_UNDER_W1}
    assert all(memory[name] > 0 for name in (IDLE_PSS, IDLE_PSS_PER_BROKER, PSS_UNDER_W1))
    for case in (c for c in CASES if c.key in SMOKE_CASES):
        entry = by_case[case.key]
        assert "error" not in entry, entry.get("error")
        assert set(entry["metrics"]) == set(case.metrics), case.key
