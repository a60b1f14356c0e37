"""FailureLog: the first failure of a kind from an address is logged at once, repeats within the
window are counted into one summary line when it ends, and the table of addresses is bounded."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from broker.security.failure_log import FailureLog

LOGGER = "test.failure_log"


class Windows:
    """A stand-in for loop.call_later that lets the test end windows when it chooses."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def call_later(self, _delay: float, callback: Callable[[], None]) -> None:
        self.pending.append(callback)

    def end_all(self) -> None:
        pending, self.pending = self.pending, []
        for callback in pending:
            callback()


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


@pytest.fixture
def windows() -> Windows:
    return Windows()


def make(windows: Windows, max_peers: int = 100) -> FailureLog:
    return FailureLog(logging.getLogger(LOGGER), window_s=60, max_peers=max_peers, call_later=windows.call_later)


def test_a_flood_from_one_address_is_one_line_then_a_count(caplog: pytest.LogCaptureFixture,
                                                           windows: Windows) -> None:
    failures = make(windows)
    for i in range(500):
        failures.warning("10.0.0.1", "SASL on listener SASL_SSL (PLAIN)", "user %r failed", f"u{i}")
    assert lines(caplog) == ["user 'u0' failed"]
    windows.end_all()
    assert lines(caplog)[1:] == ["499 more of the same failure (SASL on listener SASL_SSL (PLAIN)) from 10.0.0.1 "
                                 "in the last 60 s, not logged one by one"]
    failures.warning("10.0.0.1", "SASL on listener SASL_SSL (PLAIN)", "again")  # a new window
    assert lines(caplog)[-1] == "again"


def test_other_addresses_and_other_kinds_are_logged(caplog: pytest.LogCaptureFixture, windows: Windows) -> None:
    failures = make(windows)
    failures.warning("10.0.0.1", "TLS on listener SSL: certificate has expired", "a")
    failures.warning("10.0.0.2", "TLS on listener SSL: certificate has expired", "b")
    failures.warning("10.0.0.1", "TLS on listener SSL: PEER_DID_NOT_RETURN_A_CERTIFICATE", "c")
    failures.warning("10.0.0.1", "TLS on listener SSL: certificate has expired", "d")
    assert lines(caplog) == ["a", "b", "c"]
    windows.end_all()
    assert len(lines(caplog)) == 4 and lines(caplog)[3].startswith("1 more of the same failure")


def test_a_window_without_repeats_ends_silently(caplog: pytest.LogCaptureFixture, windows: Windows) -> None:
    failures = make(windows)
    failures.warning("::1", "kind", "once")
    windows.end_all()
    assert lines(caplog) == ["once"]


def test_beyond_max_peers_addresses_share_one_entry(caplog: pytest.LogCaptureFixture, windows: Windows) -> None:
    failures = make(windows, max_peers=3)
    for i in range(1000):
        failures.warning(f"10.1.{i // 256}.{i % 256}", "kind", "from %d", i)
    assert lines(caplog) == ["from 0", "from 1", "from 2", "from 3"]  # the fourth opens the shared entry
    windows.end_all()
    assert lines(caplog)[4] == ("996 more of the same failure (kind) from (other addresses) in the last 60 s, "
                                "not logged one by one")


def test_without_an_event_loop_every_failure_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    failures = FailureLog(logging.getLogger(LOGGER))
    failures.warning("10.0.0.1", "kind", "one")
    failures.warning("10.0.0.1", "kind", "two")
    assert lines(caplog) == ["one", "two"]
