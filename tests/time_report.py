"""Where a run's time went, printed at its end: the files that took longest (their tests' setup,
call and teardown summed) and, under xdist, when each worker finished its last test. A CI log then
shows which files to cut and whether both workers ended together (tests/conftest.py orders the
files for that)."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

FILES_SHOWN = 30


class TimeReport:
    def __init__(self) -> None:
        self.start = time.monotonic()
        self.by_file: dict[str, float] = defaultdict(float)
        self.worker_end: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.by_file[report.nodeid.split("::")[0]] += report.duration
        node = getattr(report, "node", None)  # the xdist worker that sent it, on the controller
        worker = node.gateway.id if node is not None else "main"
        self.worker_end[worker] = time.monotonic() - self.start

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", f"{FILES_SHOWN} slowest files (setup + call + teardown)")
        slowest = sorted(self.by_file.items(), key=lambda kv: -kv[1])[:FILES_SHOWN]
        for path, seconds in slowest:
            write(f"{seconds:8.1f}s {path}")
        if len(self.worker_end) > 1:
            ends = ", ".join(f"{w} {s:.0f}s" for w, s in sorted(self.worker_end.items()))
            write(f"last test ended, after the session start: {ends}")


def register(config: pytest.Config) -> None:
    """On the controller only: a worker's summary is never shown."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(TimeReport(), "eosbroker-time-report")
