"""Transactions V2 over a three-broker cluster (issues 10 and 14): a Java kafka-clients 4.x producer's
Produce v12 reaches partition leaders that are not its transaction coordinator, which add the
partitions to the transaction through AddPartitionsToTxn v5 to the coordinator's broker, as
Kafka's brokers do; commits, aborts and a consume-transform-produce are read exactly."""

from __future__ import annotations

import pytest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from tests.e2e.cluster.conftest import Cluster
from tests.e2e.cluster.test_failover import create_topic
from tests.e2e.test_transactions_v2 import compiled, run_check  # noqa: F401  (compiled is a fixture)
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e


def test_v2_transactions_span_partitions_led_by_other_brokers(cluster: Cluster, compiled: str) -> None:  # noqa: F811
    cluster.start(1, 2, 3)
    create_topic(cluster, "v2c", 2)
    leaders = cluster.settled("v2c")
    # two leaders: whichever broker coordinates the transaction, one partition is led elsewhere
    assert leaders[0][0] != leaders[1][0]
    checks = run_check(compiled, cluster.bootstrap(), "commit-abort", "v2c", "30")
    assert checks == {"read_committed": "61", "read_uncommitted": "91"}


def coordinator_of(cluster: Cluster, key: str, key_type: int) -> int:
    with RawClient(cluster.brokers[1].bootstrap) as client:
        found = client.request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,)))
    return int(found.coordinators[0].node_id)


def test_v2_consume_transform_produce_with_the_group_and_the_transaction_on_different_brokers(
        cluster: Cluster, compiled: str) -> None:  # noqa: F811
    """TxnOffsetCommit v5 reaches the group's coordinator, which adds the group to a transaction
    another broker coordinates with AddPartitionsToTxn v5 (it answered NOT_COORDINATOR for ever)."""
    cluster.start(1, 2, 3)
    # TxnV2Check's group and transactional id are both "ctp-<input>": pick an input whose two
    # coordinators are different brokers
    name = next(n for n in (f"ctpx{i}" for i in range(100))
                if coordinator_of(cluster, f"ctp-{n}", 0) != coordinator_of(cluster, f"ctp-{n}", 1))
    create_topic(cluster, name, 2)
    create_topic(cluster, f"{name}-out", 2)
    cluster.settled(name)
    cluster.settled(f"{name}-out")
    run_check(compiled, cluster.bootstrap(), "produce", name, "40", "java-in", "commit")
    checks = run_check(compiled, cluster.bootstrap(), "ctp", name, "40", f"{name}-out")
    assert checks == {"copied": "40", "output_read_committed": "40"}
