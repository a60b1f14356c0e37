"""Run on their own by tests/e2e/test_pytest_plugin.py: what the plugin reports when things go wrong."""

import os
import signal


def test_crash_the_test_did_not_ask_for(eosbroker):
    # The broker dies behind the fixture's back: the test passes, its teardown errors.
    os.kill(eosbroker.proc.pid, signal.SIGKILL)
    eosbroker.proc.wait()


def test_failure_shows_the_log(eosbroker):
    eosbroker.create_topic("the-log-says-so")
    raise AssertionError("the test's own failure")
