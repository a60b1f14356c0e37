"""SIGTERM to a broker cut off from PostgreSQL and the object store (both its paths blackholed by
toxiproxy: nothing answers and nothing is closed) while it leads partitions, transaction-state and
group shards with writes since their last producer snapshot, and a heartbeat statement of its own
waiting on the dead route. Kafka's controlled shutdown is bounded; so is ours: the broker leaves
what it can, gives up on what does not answer, and exits 0 well within the 20 s the harness allows
(tests/broker_process.py). The other broker takes the partitions once the lease lapses and serves
every committed record."""

from __future__ import annotations

import time

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from tests.e2e.cluster.conftest import LEASE_MS, WAIT_S, wait_until
from tests.e2e.cluster.test_failover import create_topic, led_by
from tests.e2e.objects.test_network_faults import (  # noqa: F401  (fixtures)
    CUT,
    ProxiedCluster,
    cluster,
    paths,
    toxiproxy,
)
from tests.e2e.txn_clients import confluent_read, txn_producer
from tests.toxiproxy import Toxiproxy

TOPIC = "leaving"
PARTITIONS = 8


def _write(bootstrap: str) -> None:
    """A committed transaction over every partition and a group's offsets: writes to broker 1's
    data partitions and to the shards it coordinates."""
    producer = txn_producer(bootstrap, "leaving-txn")
    producer.begin_transaction()
    for p in range(PARTITIONS):
        producer.produce(TOPIC, value=b"%d" % p, partition=p)
    producer.commit_transaction(WAIT_S)
    for group in ("leaving-a", "leaving-b", "leaving-c", "leaving-d"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[CTopicPartition(TOPIC, p, 1) for p in range(PARTITIONS)], asynchronous=False)
        finally:
            consumer.close()


def test_sigterm_while_cut_off_from_database_and_store_ends_cleanly(
        cluster: ProxiedCluster, toxiproxy: Toxiproxy, paths: dict[str, str]) -> None:  # noqa: F811
    cluster.start(1, 2)
    create_topic(cluster, TOPIC, PARTITIONS)
    assert led_by(cluster.settled(TOPIC), CUT)
    _write(cluster.bootstrap())
    for name in (paths["pg"], paths["s3"]):
        toxiproxy.blackhole(name)
    time.sleep(LEASE_MS / 1000 / 2)  # a heartbeat is waiting on the dead route; the lease still holds
    cut = cluster.brokers[CUT]
    began = time.monotonic()
    code = cut.stop()
    print(f"broker {CUT} stopped in {time.monotonic() - began:.1f} s (exit status {code})")
    cluster.ended.add(CUT)
    assert cut.problems() == [], cut.problems()
    assert code == 0
    wait_until(lambda: sorted(led_by(cluster.leaders(TOPIC, 2), 2)) == list(range(PARTITIONS)),
               "broker 2 leading every partition")
    rows = confluent_read(cluster.bootstrap(), {TOPIC: PARTITIONS}, "read_committed", PARTITIONS)
    assert sorted(v for _, _, _, v in rows) == sorted(b"%d" % p for p in range(PARTITIONS))
