"""The pytest plugin that `pip install eosbroker` registers (the `pytest11` entry point `eosbroker`).

Fixtures:
- `eosbroker`: a fresh EmbeddedBroker (broker/embedded.py) for one test, with `bootstrap_servers`,
  `create_topic(name, partitions=1, config=None)`, `kill()` (SIGKILL), `restart()`, `expect_log(regex)`;
- `eosbroker_session`: one broker shared by the whole session (give each test its own topics).

At teardown the broker is stopped with SIGTERM and the test errors if it exited non-zero (a kill()
of the test's own excepted) or logged an ERROR line or a traceback it did not declare with
expect_log(regex). A failed test shows the tail of the broker's log in a report section. Data and
log live under pytest's tmp_path_factory, which keeps the last runs' directories.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from .embedded import EmbeddedBroker

_FIXTURES = ("eosbroker", "eosbroker_session")


def _serve(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[EmbeddedBroker]:
    broker = EmbeddedBroker(tmp_path_factory.mktemp(name)).start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def eosbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """A fresh eosbroker process for this test, on a free loopback port."""
    yield from _serve(tmp_path_factory, "eosbroker")


@pytest.fixture(scope="session")
def eosbroker_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """One eosbroker process for the whole test session."""
    yield from _serve(tmp_path_factory, "eosbroker-session")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    report = yield
    if isinstance(report, pytest.TestReport) and report.failed and report.when == "call":
        funcargs = getattr(item, "funcargs", {})
        for name in _FIXTURES:
            broker = funcargs.get(name)
            if isinstance(broker, EmbeddedBroker):
                report.sections.append((f"{name} log (last lines of {broker.log_path})", broker.log_tail()))
    return report
