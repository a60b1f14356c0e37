"""franz-go's own pkg/kgo integration tests against the real broker (issue 14; tests/franz_go.py):
its transactional and group ETLs, KIP-848 groups, produce and consume tests, once with
transaction.version 2 (franz-go then uses Transactions V2: Produce v12+, EndTxn v5) and once with 1.
Skipped only when the Go toolchain is absent; the module comes from the Go module proxy."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import BrokerFactory
from tests.franz_go import ALLOWED, SCRAM_SETTINGS, build, run, scram_env

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("go") is None, reason="the Go toolchain (go) is not installed")]


def test_franz_go_kgo_suite_under_transactions_v2(broker_factory: BrokerFactory) -> None:
    binary = build()
    broker = broker_factory(SCRAM_SETTINGS | {"transaction.version": "2"})
    env = scram_env(broker.bootstrap, broker.bootstrap_of("SASL_PLAINTEXT"))
    # fewer records per ETL than franz-go's default 500,000 keeps the run around a minute
    result = run(binary, broker.bootstrap, records=5000, extra_env=env)
    assert not result.failed, f"franz-go tests failed: {result.failed}\n{result.output[-6000:]}"
    assert set(ALLOWED) <= set(result.passed)


def test_franz_go_transactional_etl_under_transactions_v1(broker_factory: BrokerFactory) -> None:
    # the level changes only how transactions run: the transactional ETL is the test it matters to
    # (`make client-suites` runs everything at both levels)
    broker = broker_factory({"transaction.version": "1"})
    result = run(build(), broker.bootstrap, records=5000, tests=("TestTxnEtl",))
    assert not result.failed and result.passed == ["TestTxnEtl"], f"{result.failed}\n{result.output[-6000:]}"
