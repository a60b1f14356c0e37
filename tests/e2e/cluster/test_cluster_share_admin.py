"""kafka-share-groups administering a share group whose share-partitions are led by different
brokers, over three brokers on PostgreSQL and over a local set of three processes
(`--processes 3`): --describe answers every partition's start offset and lag from the share
coordinators, whichever broker leads the share-partition; --reset-offsets (refused while a member
is there, then --to-earliest and --to-datetime) makes the leaders deliver from the new start with
delivery count 1 to Java's KafkaShareConsumer (kafka-console-share-consumer 4.4); --delete-offsets
and --delete remove the state. The share coordinator's answers to InitializeShareGroupState,
ReadShareGroupStateSummary, WriteShareGroupState and DeleteShareGroupState are those a Kafka 4.4
node gave side by side for the same raw requests (bench/servers.py's start_kafka)."""

from __future__ import annotations

import base64
import datetime
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.delete_share_group_state.v0 import request as delete_req
from kio.schema.initialize_share_group_state.v0 import request as init_req
from kio.schema.read_share_group_state_summary.v1 import request as summary_req
from kio.schema.write_share_group_state.v0 import request as write_req
from kio.static.primitive import i32, i64

from protocol.errors import ErrorCode as E
from tests.e2e.cluster.conftest import CLUSTER_SETTINGS, WAIT_S, Cluster, wait_until
from tests.e2e.cluster.test_cluster_coordinators import coordinator_of, create_topic
from tests.e2e.cluster.test_cluster_share_groups import SHARE
from tests.e2e.test_share_groups_tools import GIVE_UP_S, rows
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient
from tests.supervised import Supervised

pytestmark = pytest.mark.e2e
SETTINGS = {"request.timeout.ms": "2000", "share.coordinator.state.topic.num.partitions": "4"}
PARTITIONS = 3


@pytest.mark.timeout(600)  # a dozen JVM tool runs
def test_kafka_share_groups_over_three_brokers(cluster: Cluster) -> None:
    cluster.start(1, 2, 3, settings=SETTINGS)
    administer(cluster.bootstrap(), lambda: spread(cluster.leaders("st", 1)))


@pytest.mark.timeout(600)
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


def test_share_state_answers_as_kafka_gives_them(cluster: Cluster) -> None:
    cluster.start(1, settings=SETTINGS)
    [leader] = create_topic(cluster, "t", 1).values()
    topic_id = cluster.metadata(leader, "t").topics[0].topic_id
    fenced = (E.fenced_state_epoch, "The coordinator rejected the request because the state epoch did not match.")
    kafka_key = f"g:{base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip('=')}:0"  # Kafka's Uuid.toString
    assert coordinator_of(cluster, SHARE, kafka_key) == 1  # FindCoordinator makes __share_group_state, as Kafka
    with RawClient(cluster.brokers[1].bootstrap) as client:
        state = StateRequests(client, topic_id)
        wait_until(lambda: state.summary().error_code == E.none, "the share coordinator loaded")
        assert summary(state.summary()) == (E.none, 0, 0, -1, -1)  # no state
        assert answer(state.initialize(2, 5)) == (E.none, None)
        assert summary(state.summary()) == (E.none, 2, 0, 5, 0)
        assert answer(state.initialize(1, 0)) == fenced
        assert answer(state.initialize(2, 7)) == (E.none, None)  # the same epoch again is allowed
        assert answer(state.write(1, 9)) == fenced
        assert answer(state.write(2, 9)) == (E.none, None)
        # Kafka answers DeliveryCompleteCount -1 here (a v0 write carries none); eosbroker counts it: 0
        assert summary(state.summary())[:4] == (E.none, 2, 0, 9)
        assert answer(state.delete()) == (E.none, None)
        assert summary(state.summary()) == (E.none, 0, 0, -1, -1)
        assert answer(state.delete()) == (E.none, None)  # nothing to delete: no error
        assert answer(state.initialize(-1, 0)) == (E.invalid_request, "The state epoch cannot be a negative number.")


class StateRequests:
    """The share state requests of group g's share-partition t-0, one partition each."""

    def __init__(self, client: RawClient, topic_id: uuid.UUID) -> None:
        self.client, self.topic_id = client, topic_id

    def summary(self) -> Any:
        return self._one(summary_req.ReadShareGroupStateSummaryRequest(group_id="g", topics=(
            summary_req.ReadStateSummaryData(topic_id=self.topic_id, partitions=(
                summary_req.PartitionData(partition=i32(0), leader_epoch=i32(0)),)),)))

    def initialize(self, state_epoch: int, start_offset: int) -> Any:
        return self._one(init_req.InitializeShareGroupStateRequest(group_id="g", topics=(init_req.InitializeStateData(
            topic_id=self.topic_id, partitions=(init_req.PartitionData(
                partition=i32(0), state_epoch=i32(state_epoch), start_offset=i64(start_offset)),)),)))

    def write(self, state_epoch: int, start_offset: int) -> Any:
        return self._one(write_req.WriteShareGroupStateRequest(group_id="g", topics=(write_req.WriteStateData(
            topic_id=self.topic_id, partitions=(write_req.PartitionData(
                partition=i32(0), state_epoch=i32(state_epoch), leader_epoch=i32(0), start_offset=i64(start_offset),
                state_batches=()),)),)))

    def delete(self) -> Any:
        return self._one(delete_req.DeleteShareGroupStateRequest(group_id="g", topics=(delete_req.DeleteStateData(
            topic_id=self.topic_id, partitions=(delete_req.PartitionData(partition=i32(0)),)),)))

    def _one(self, request: Any) -> Any:
        [result] = [p for topic in self.client.request(request).results for p in topic.partitions]
        return result


def summary(result: Any) -> tuple[object, ...]:
    return (result.error_code, result.state_epoch, result.leader_epoch, result.start_offset,
            result.delivery_complete_count)


def answer(result: Any) -> tuple[object, ...]:
    return result.error_code, result.error_message
