"""Fixtures for the Spark e2e tests: one local[2] SparkSession per test session with the connector
jars from `make spark-jars` (created only when a test asks for it), and a broker with small
internal topics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.job import spark_session
from tests.broker_process import BrokerProcess
from tests.e2e.security_setup import add_scram_users, broker_settings
from tests.tls_certs import TlsFiles

# Small internal topics keep broker start-up quick.
BROKER_SETTINGS = {"transaction.state.log.num.partitions": "5", "offsets.topic.num.partitions": "5"}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session(app_name="eosbroker-e2e")
    yield session
    session.stop()


@pytest.fixture
def spark_broker(broker_factory):  # type: ignore[no-untyped-def]
    return broker_factory(BROKER_SETTINGS)


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory, tls_files: TlsFiles) -> Iterator[BrokerProcess]:
    """A broker with every kind of listener and SCRAM users (tests/e2e/security_setup.py)."""
    broker = BrokerProcess(tmp_path_factory.mktemp("secure") / "data", broker_settings(tls_files)).start()
    try:
        add_scram_users(broker.bootstrap)
        yield broker
    finally:
        broker.close()
