"""Jepsen-style history test against the real broker: transactional and idempotent producers run
while the broker is killed with SIGKILL and restarted, or paused with SIGSTOP and resumed; reads
between the faults and at the end are checked for lost, aborted-but-visible, duplicated, torn,
reordered and re-offset records (tests/history/checker.py). A few cycles here; `make chaos` runs
many (HISTORY_CYCLES)."""

from __future__ import annotations

import os

import pytest

from tests.history.checker import check
from tests.history.workload import KillRestart, PauseResume, WorkloadConfig, run

pytestmark = pytest.mark.e2e

CYCLES = int(os.environ.get("HISTORY_CYCLES", "5"))
SEED = int(os.environ.get("HISTORY_SEED", "0"))
HOLD_S = float(os.environ.get("HISTORY_HOLD_S", "1.0"))  # longest time the broker stays down
SETTINGS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
            "log.segment.bytes": "16384"}  # small segments: rolls and their recovery are part of it


@pytest.mark.timeout(300 + 60 * CYCLES)
def test_history_under_kill_and_pause(broker_factory):
    broker = broker_factory(SETTINGS)
    config = WorkloadConfig(cycles=CYCLES, seed=SEED, hold_s=HOLD_S)
    history = run(broker, [KillRestart(broker), PauseResume(broker)], config)
    summary = history.summary()
    print("history:", summary)
    assert summary["transactions acknowledged"] > 0 and summary["sends acknowledged"] > 0
    assert check(history) == []
