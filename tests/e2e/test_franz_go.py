"""franz-go's own pkg/kgo integration tests against the real broker (issue 14; tests/franz_go.py):
its transactional, group and share group (KIP-932) ETLs, KIP-848 groups, produce and consume tests, once with
transaction.version 2 (franz-go then uses Transactions V2: Produce v12+, EndTxn v5) and once with 1.
Skipped only when the Go toolchain is absent; the module comes from the Go module proxy."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory
from tests.franz_go import ALLOWED, SCRAM_SETTINGS, SETTINGS, SuiteResult, build, run, scram_env

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("go") is None, reason="the Go toolchain (go) is not installed")]


@pytest.fixture(scope="module")
def v1_etl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[SuiteResult]]:
    """franz-go's transactional ETL at transaction.version 1, on a broker of its own, started with
    the module so that it runs beside the V2 suite: both mostly wait (on rebalances and commits;
    the V2 suite takes ~22 s of client CPU in ~90 s), so the two take about as long as one."""
    binary = build()
    broker = BrokerProcess(tmp_path_factory.mktemp("franz-go-v1") / "data",
                           SETTINGS | {"transaction.version": "1"}).start()
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(run, binary, broker.bootstrap, 5000, tests=("TestTxnEtl",))
    broker.close()  # fails the module's last test if the broker logged an error or exited badly


@pytest.mark.usefixtures("v1_etl")  # first, so that the V1 ETL runs while this one does
def test_franz_go_kgo_suite_under_transactions_v2(broker_factory: BrokerFactory) -> None:
    binary = build()
    broker = broker_factory(SETTINGS | SCRAM_SETTINGS | {"transaction.version": "2"})
    env = scram_env(broker.bootstrap, broker.bootstrap_of("SASL_PLAINTEXT"))
    # fewer records per ETL than franz-go's default 500,000 keeps the run around a minute
    result = run(binary, broker.bootstrap, records=5000, extra_env=env)
    assert not result.failed, f"franz-go tests failed: {result.failed}\n{result.output[-6000:]}"
    assert set(ALLOWED) <= set(result.passed)


def test_franz_go_transactional_etl_under_transactions_v1(v1_etl: Future[SuiteResult]) -> None:
    # the level changes only how transactions run: the transactional ETL is the test it matters to
    # (`make client-suites` runs everything at both levels)
    result = v1_etl.result(timeout=900)
    assert not result.failed and result.passed == ["TestTxnEtl"], f"{result.failed}\n{result.output[-6000:]}"
