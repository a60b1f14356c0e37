"""A share group (KIP-932) across the four processes of a set, over a local data dir and in cluster
mode: the group's coordinator (one process) initializes the share-partitions at their keys' share
coordinators, whichever processes lead them (InitializeShareGroupState between processes), before
assigning them, and a confluent-kafka ShareConsumer gets every record once, from all four leaders."""

from __future__ import annotations

import confluent_kafka as ck
import pytest

from tests.e2e.cluster.test_processes import (  # noqa: F401 (fixtures)
    create_topic,
    four,
    settings,
    spread_evenly,
    start,
)
from tests.e2e.test_share_groups_tools import poll_values
from tests.kafka_tools import run_tool
from tests.supervised import Supervised

pytestmark = pytest.mark.e2e


def test_a_share_group_reads_every_partition_of_a_set_once(four: Supervised) -> None:  # noqa: F811
    start(four)
    create_topic(four.bootstrap, "queue", 8)
    spread_evenly(four, "queue", 8)
    assert run_tool("kafka-configs", "--bootstrap-server", four.bootstrap, "--alter", "--entity-type", "groups",
                    "--entity-name", "workers", "--add-config", "share.auto.offset.reset=earliest").returncode == 0
    producer = ck.Producer({"bootstrap.servers": four.bootstrap})
    for i in range(80):
        producer.produce("queue", value=b"%d" % i, partition=i % 8)
    assert producer.flush(30) == 0
    consumer = ck.ShareConsumer({"bootstrap.servers": four.bootstrap, "group.id": "workers",
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe(["queue"])
    try:
        got = poll_values(consumer, 80, ck.AcknowledgeType.ACCEPT)
        assert all(tp.error is None for tp in consumer.commit_sync())
        assert sorted(int(m.value()) for m in got) == list(range(80))
        assert {m.delivery_count() for m in got} == {1}
        assert poll_values(consumer, 1, give_up_s=3) == []
    finally:
        consumer.close()
    assert four.stop() == 0
