from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess

BrokerFactory = Callable[..., BrokerProcess]


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Start brokers with settings: broker_factory({"num.partitions": "3"}). At teardown each is
    stopped with SIGTERM and checked: the test errors if one exited non-zero or logged an ERROR
    line or a traceback it did not declare with broker.expect_log(regex)."""
    started: list[BrokerProcess] = []

    def start(settings: dict[str, str] | None = None, name: str = "data") -> BrokerProcess:
        proc = BrokerProcess(tmp_path / name, settings).start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()
    problems = [p for proc in started for p in proc.problems()]
    assert not problems, "a broker misbehaved; declare what the test provokes with broker.expect_log(regex):\n" \
        + "\n".join(problems)


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    """A fresh broker on an ephemeral loopback port with its data under tmp_path."""
    return broker_factory()
