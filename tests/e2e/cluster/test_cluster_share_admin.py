"""kafka-share-groups administering a share group whose share-partitions are led by different
brokers, over three brokers on PostgreSQL and over a local set of three processes
(`--processes 3`): --describe answers every partition's start offset and lag from the share
coordinators, whichever broker leads the share-partition; --reset-offsets (refused while a member
is there, then --to-earliest and --to-datetime) makes the leaders deliver from the new start with
delivery count 1 to Java's KafkaShareConsumer (kafka-console-share-consumer 4.4); --delete-offsets
and --delete remove the state."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from pathlib import Path

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.cluster.conftest import CLUSTER_SETTINGS, WAIT_S, Cluster, wait_until
from tests.e2e.test_share_groups_tools import GIVE_UP_S, rows
from tests.kafka_tools import run_tool
from tests.supervised import Supervised

pytestmark = pytest.mark.e2e
SETTINGS = {"request.timeout.ms": "2000", "share.coordinator.state.topic.num.partitions": "4"}
PARTITIONS = 3


def test_kafka_share_groups_over_three_brokers(cluster: Cluster) -> None:
    cluster.start(1, 2, 3, settings=SETTINGS)
    administer(cluster.bootstrap(), lambda: spread(cluster.leaders("st", 1)))


def test_kafka_share_groups_over_a_local_set_of_three_processes(tmp_path: Path) -> None:
    procs = Supervised(tmp_path, 3, {**CLUSTER_SETTINGS, **SETTINGS})
    procs.start()
    try:
        administer(procs.bootstrap, lambda: True)
    finally:
        assert procs.stop() in (0, None)
    assert not procs.problems(), "a process misbehaved:\n" + "\n".join(procs.problems())


def spread(leaders: dict[int, tuple[int, int]]) -> bool:
    return len({leader for leader, _ in leaders.values()}) > 1


def administer(bootstrap: str, spread_out: Callable[[], bool]) -> None:
    def tool(name: str, *args: str) -> str:
        done = run_tool(name, "--bootstrap-server", bootstrap, *args)
        return done.stdout + done.stderr

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("st", PARTITIONS, 1)]).values():
        future.result(WAIT_S)
    wait_until(spread_out, "st's partitions led by more than one broker")
    assert "Completed" in tool("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", "sg",
                               "--add-config", "share.auto.offset.reset=earliest")
    produce(bootstrap, range(30))
    time.sleep(0.05)  # the records after `between` have later timestamps than those before it
    between = datetime.datetime.now()
    time.sleep(0.05)
    produce(bootstrap, range(30, 36))
    assert sorted(delivered(tool, 36)) == [(i, 1) for i in range(36)]
    assert offsets(tool) == [["sg", "st", str(p), "12", "0"] for p in range(PARTITIONS)]

    member = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "sg"})
    member.subscribe(["st"])
    try:
        wait_until(lambda: "sg" in tool("kafka-share-groups", "--describe", "--group", "sg", "--members")
                   .split("CLIENT-ID")[-1], "the member in the group")
        refused = tool("kafka-share-groups", "--reset-offsets", "--group", "sg", "--topic", "st", "--to-earliest",
                       "--execute")
        assert "Share group 'sg' is not empty." in refused
    finally:
        member.close()

    reset = tool("kafka-share-groups", "--reset-offsets", "--group", "sg", "--topic", "st", "--to-earliest",
                 "--execute")
    assert sorted(rows(reset)[1:]) == [["sg", "st", str(p), "0"] for p in range(PARTITIONS)]
    assert offsets(tool) == [["sg", "st", str(p), "0", "12"] for p in range(PARTITIONS)]
    assert sorted(delivered(tool, 36)) == [(i, 1) for i in range(36)]

    reset = tool("kafka-share-groups", "--reset-offsets", "--group", "sg", "--topic", "st", "--to-datetime",
                 between.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3], "--execute")
    assert sorted(rows(reset)[1:]) == [["sg", "st", str(p), "10"] for p in range(PARTITIONS)]
    assert sorted(delivered(tool, 6)) == [(i, 1) for i in range(30, 36)]

    deleted = tool("kafka-share-groups", "--delete-offsets", "--group", "sg", "--topic", "st")
    assert deleted.split() == ["TOPIC", "STATUS", "st", "Successful"]
    assert offsets(tool) == []
    # with no state, the group starts again where share.auto.offset.reset says
    assert sorted(delivered(tool, 36)) == [(i, 1) for i in range(36)]
    assert "Deletion of requested share groups ('sg') was successful." in tool("kafka-share-groups", "--delete",
                                                                               "--group", "sg")
    assert tool("kafka-share-groups", "--list").split() == []


def produce(bootstrap: str, values: range) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for i in values:
        producer.produce("st", value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(WAIT_S) == 0


def delivered(tool: Callable[..., str], count: int) -> list[tuple[int, int]]:
    """(value, delivery count) of `count` records read by kafka-console-share-consumer (Java's
    KafkaShareConsumer, implicit acknowledgement)."""
    out = tool("kafka-console-share-consumer", "--topic", "st", "--group", "sg", "--max-messages", str(count),
               "--timeout-ms", str(GIVE_UP_S * 1000), "--formatter-property", "print.delivery=true")
    return [(int(value), int(count_.removeprefix("Delivery:"))) for count_, value in
            (line.split("\t") for line in out.splitlines() if line.startswith("Delivery:"))]


def offsets(tool: Callable[..., str]) -> list[list[str]]:
    """kafka-share-groups --describe --offsets: a row per partition with a start offset."""
    return sorted(rows(tool("kafka-share-groups", "--describe", "--group", "sg", "--offsets"))[1:])
