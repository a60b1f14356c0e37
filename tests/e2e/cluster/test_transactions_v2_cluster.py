"""Transactions V2 over a three-broker cluster (issues 10 and 14): a Java kafka-clients 4.x producer's
Produce v12 reaches partition leaders that are not its transaction coordinator, which add the
partitions to the transaction through AddPartitionsToTxn v5 to the coordinator's broker, as
Kafka's brokers do; commits, aborts and a consume-transform-produce are read exactly."""

from __future__ import annotations

import pytest

from tests.e2e.cluster.conftest import Cluster
from tests.e2e.cluster.test_failover import create_topic
from tests.e2e.test_transactions_v2 import compiled, run_check  # noqa: F401  (compiled is a fixture)

pytestmark = pytest.mark.e2e


def test_v2_transactions_span_partitions_led_by_other_brokers(cluster: Cluster, compiled: str) -> None:  # noqa: F811
    cluster.start(1, 2, 3)
    create_topic(cluster, "v2c", 2)
    leaders = cluster.settled("v2c")
    # two leaders: whichever broker coordinates the transaction, one partition is led elsewhere
    assert leaders[0][0] != leaders[1][0]
    checks = run_check(compiled, cluster.bootstrap(), "commit-abort", "v2c", "30")
    assert checks == {"read_committed": "61", "read_uncommitted": "91"}
