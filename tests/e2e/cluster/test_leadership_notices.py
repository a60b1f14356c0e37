"""Brokers wake each other through PostgreSQL's NOTIFY (docs/cluster.md, "Balance"): with a lease of
60 s the balancing rounds are 15 s apart, so each step below is done only by a notice. A topic
created through one broker gets leaders on every broker at once (and on the creating broker before
CreateTopics answers), a broker that joins gets its share, and one that stops hands its partitions
over, each well within a round."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from .conftest import Cluster, wait_until

pytestmark = pytest.mark.e2e

LONG_LEASE = {"cluster.lease.ms": "60000"}
WAIT_S = 10.0  # two thirds of the 15 s between rounds that no notice woke


def all_led(cluster: Cluster, topic: str, partitions: int, by: set[int]) -> bool:
    views = [cluster.leaders(topic, n) for n in cluster.live()]
    return all(len(v) == partitions and {leader for leader, _ in v.values()} == by for v in views)


def test_creation_joining_and_leaving_are_acted_on_at_once(cluster: Cluster) -> None:
    cluster.start(1, 2, settings=LONG_LEASE)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(1)})
    for future in admin.create_topics([NewTopic("noticed", 6, 1)]).values():
        future.result(WAIT_S)
    wait_until(lambda: all_led(cluster, "noticed", 6, {1, 2}), "leaders on both brokers", WAIT_S)
    cluster.start(3, settings=LONG_LEASE)
    wait_until(lambda: all_led(cluster, "noticed", 6, {1, 2, 3}), "broker 3's share", WAIT_S)
    cluster.brokers[3].stop()
    cluster.ended.add(3)
    wait_until(lambda: all_led(cluster, "noticed", 6, {1, 2}), "broker 3's partitions taken over", WAIT_S)


def test_create_topics_answers_once_every_new_partition_has_a_leader(cluster: Cluster) -> None:
    """The creating broker's first Metadata after CreateTopics (and CreatePartitions) names a live leader for every new
    partition, its own and the other brokers' (they take theirs on the creation's notice): a
    client's first produce finds the topic ready, as Kafka's controller assigns leaders before it
    answers. Before, the creating broker's view lagged its next round, 0.28-0.44 s."""
    cluster.start(1, 2, 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(1)})
    for round_ in range(3):
        topic = f"ready-{round_}"
        for future in admin.create_topics([NewTopic(topic, 9, 1)]).values():
            future.result(WAIT_S)
        leaders = cluster.leaders(topic, 1)
        assert len(leaders) == 9 and all(leader in {1, 2, 3} for leader, _ in leaders.values()), leaders
        assert {leader for leader, _ in leaders.values()} == {1, 2, 3}, leaders
    # CreatePartitions too: the added ones are led when it answers.
    for future in admin.create_partitions([NewPartitions("ready-0", 12)]).values():
        future.result(WAIT_S)
    leaders = cluster.leaders("ready-0", 1)
    assert len(leaders) == 12 and all(leader in {1, 2, 3} for leader, _ in leaders.values()), leaders
