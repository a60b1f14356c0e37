"""The broker fixture's own check: what counts as a misbehaving broker, and that expect_log() is
the only way to let an ERROR line or a traceback through."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess

INFO = "2026-11-23 11:00:00,001 INFO broker: listening on 127.0.0.1:4242\n"
WARNING = "2026-11-23 11:00:00,002 WARNING storage.log_manager: unclean shutdown: recovering\n"
ERROR = "2026-11-23 11:00:00,003 ERROR broker.connection: cannot parse request from 127.0.0.1:5555\n"
TRACEBACK = ["Traceback (most recent call last):\n", '  File "x.py", line 1, in f\n', "ValueError: boom\n"]
CRITICAL = "2026-11-23 11:00:00,004 CRITICAL broker: giving up\n"


def process_with(tmp_path: Path, lines: list[str]) -> BrokerProcess:
    proc = BrokerProcess(tmp_path / "data")
    proc.log_lines = list(lines)
    return proc


def test_info_and_warning_lines_are_fine(tmp_path):
    assert process_with(tmp_path, [INFO, WARNING, INFO]).problems() == []


@pytest.mark.parametrize("lines", [
    [INFO, ERROR, INFO],
    [INFO, CRITICAL],
    [INFO, WARNING.replace("\n", " (with exc_info)\n"), *TRACEBACK],  # a traceback at any level
    [INFO, "Exception ignored in: <function Connection.__del__>\n", *TRACEBACK],  # printed by Python itself
    ["Fatal Python error: Aborted\n"],
    [INFO, "/r/broker/connection.py:80: ResourceWarning: unclosed <socket.socket fd=9>\n"],
], ids=["error", "critical", "warning-traceback", "unraisable", "fatal", "leak"])
def test_errors_and_tracebacks_are_problems(tmp_path, lines):
    proc = process_with(tmp_path, lines)
    assert len(proc.problems()) == 1
    with pytest.raises(AssertionError, match="expect_log"):
        proc.check()


def test_expect_log_lets_through_only_what_it_matches(tmp_path):
    proc = process_with(tmp_path, [INFO, ERROR, *TRACEBACK, INFO, CRITICAL])
    proc.expect_log(r"cannot parse request")
    assert [p.splitlines()[0] for p in proc.problems()] == [CRITICAL.strip()]
    proc.expect_log(r"ValueError: boom")  # matches the other record's traceback, not this one
    assert len(proc.problems()) == 1


def test_a_traceback_belongs_to_the_record_before_it(tmp_path):
    proc = process_with(tmp_path, [ERROR, *TRACEBACK, INFO])
    [problem] = proc.problems()
    assert problem == ERROR + "".join(TRACEBACK)


@pytest.mark.e2e
def test_sigterm_exits_0_and_a_broker_that_died_is_reported(tmp_path):
    proc = BrokerProcess(tmp_path / "data").start()
    assert proc.stop() == 0
    assert proc.problems() == []
    proc.start()
    proc.kill()  # our SIGKILL is a crash the test asked for
    assert proc.problems() == []
    proc.start()
    assert proc.proc is not None
    os.kill(proc.proc.pid, signal.SIGKILL)  # one the test did not ask for
    proc.proc.wait(10)
    assert proc.stop() == -signal.SIGKILL
    assert proc.problems() == [f"the broker exited by itself with code {-signal.SIGKILL}"]
