"""The pytest plugin users get with eosbroker (broker/pytest_plugin.py), tested as a user runs it: pytest
in a subprocess over the example project examples/pytest-eosbroker/ (the README's consume-transform-
produce test, create_topic, kill/restart, the session-scoped broker, the context manager)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points

import pytest

from broker.embedded import BrokerMisbehaved, EmbeddedBroker
from tests.broker_process import REPO

PROJECT = REPO / "examples" / "pytest-eosbroker"


def run_pytest(*args: str) -> tuple[dict[str, int], str]:
    """Run pytest on the example project, which loads the plugin through the installed entry point;
    ({outcome: count}, output)."""
    # PYTHONPATH: this checkout's broker, in the test run and in the brokers it starts. Hypothesis (our
    # venv has it; kio imports it) keeps its cache in ours, not in a .hypothesis/ left in the example.
    env = dict(os.environ, PYTHONPATH=str(REPO), HYPOTHESIS_STORAGE_DIRECTORY=str(REPO / ".hypothesis"))
    # no:asyncio: our venv's pytest-asyncio warns about a setting the example has no reason to set.
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:asyncio", *args]
    proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=240)
    output = proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?)", summary)}, output


def test_entry_point_is_declared_and_installed() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"eosbroker": "broker.pytest_plugin"}
    # the example project gets the plugin from this entry point alone, as users do
    (installed,) = entry_points(group="pytest11", name="eosbroker")
    assert installed.value == "broker.pytest_plugin", "pip install -e . again to install the entry point"


def test_readme_example_is_the_tested_one() -> None:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    (example,) = [b for b in blocks if "def test_uppercase_exactly_once(eosbroker)" in b]
    assert example in (PROJECT / "tests" / "test_pipeline.py").read_text()


@pytest.mark.e2e
def test_example_project_passes() -> None:
    counts, output = run_pytest("-q")
    assert counts == {"passed": 6}, output


@pytest.mark.e2e
def test_the_fixture_reports_a_crash_and_shows_the_log() -> None:
    counts, output = run_pytest("-q", "misbehaving")
    assert counts == {"passed": 1, "failed": 1, "error": 1}, output
    # a crash the test did not ask for fails its teardown, with the log's tail
    assert "the broker exited by itself with code -9" in output, output
    assert "--- last lines of the log ---" in output, output
    # a failed test gets the broker's log in a report section
    assert re.search(r"eosbroker log \(last lines of .*broker\.log\)", output), output
    assert "created topic the-log-says-so" in output, output


@pytest.mark.e2e
def test_a_broker_that_cannot_start_says_why(tmp_path) -> None:
    broker = EmbeddedBroker(tmp_path, settings={"num.partitions": "0"})
    with pytest.raises(BrokerMisbehaved, match=r"did not start(.|\n)*eosbroker: .*num\.partitions"):
        broker.start()
    assert not broker.running()
    assert broker.problems() == []  # the start-up failure was the exception, not a later complaint
