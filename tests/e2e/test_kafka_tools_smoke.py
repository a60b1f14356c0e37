"""Kafka's own CLI tools (kafka-tools, `make kafka-tools`) reach the broker: the runner works and
kafka-broker-api-versions lists the APIs the broker advertises."""

from __future__ import annotations

import pytest

from tests.kafka_tools import run_tool

pytestmark = pytest.mark.e2e


def test_broker_api_versions_lists_produce_and_fetch(broker) -> None:  # type: ignore[no-untyped-def]
    out = run_tool("kafka-broker-api-versions", "--bootstrap-server", broker.bootstrap, check=True)
    assert f"{broker.bootstrap} (id: 1 rack: null" in out.stdout, out.stdout + out.stderr
    assert "Produce(0): 0 to 13 [usable: 13]" in out.stdout, out.stdout
    assert "Fetch(1): 4 to 18 [usable: 18]" in out.stdout, out.stdout


def test_topics_create_and_describe(broker) -> None:  # type: ignore[no-untyped-def]
    run_tool("kafka-topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", "tools-smoke",
             "--partitions", "3", check=True)
    out = run_tool("kafka-topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", "tools-smoke",
                   check=True)
    assert "PartitionCount: 3" in out.stdout, out.stdout
