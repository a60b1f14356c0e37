"""Leadership in the request path: handlers answer from the broker's ClusterView. Local mode's
view leads everything at epoch 0; a ClusterView of several brokers (ThreeBrokers, as cluster
mode's view would report them) drives the leader, epoch and broker-list answers of Metadata,
DescribeCluster, Produce, Fetch, ListOffsets and OffsetForLeaderEpoch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from broker.cluster.lease_view import LeaseView
from broker.cluster.local_view import LocalClusterView
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.api import (
    BrokerEndpoint,
    ClusterSnapshot,
    ClusterView,
    LeadershipListener,
    PartitionLeader,
    PartitionLease,
    TopicPartition,
    Unregistered,
)
from tests.broker.test_admin_handlers import call

E = ErrorCode
BROKERS = [BrokerEndpoint(1, "h1", 9091, None), BrokerEndpoint(2, "h2", 9092, "r2"), BrokerEndpoint(3, "h3", 9093)]
# Registered, lease lapsed; broker 5 has no listener the client came in on (left out, as live ones are).
FENCED = [BrokerEndpoint(0, "h0", 9090, "r0"), BrokerEndpoint(4, "h4", 9094),
          BrokerEndpoint(5, "h5", 9095, None, (("INTERNAL", "h5", 9195),))]


class ThreeBrokers:
    """Broker 1's view of a three-broker cluster: it leads t-0 at epoch 5, broker 2 leads t-1 at
    epoch 3, and t-2 has no live leader."""

    node_id = 1
    leads_everything = False
    LEADERS = {0: PartitionLeader(1, 5), 1: PartitionLeader(2, 3), 2: PartitionLeader(-1, 4)}

    def live_brokers(self) -> list[BrokerEndpoint]:
        return BROKERS

    def fenced_brokers(self) -> list[BrokerEndpoint]:
        return FENCED

    def leader(self, tp: TopicPartition) -> PartitionLeader | None:
        return self.LEADERS.get(tp.partition) if tp.topic == "t" else None

    def electing(self, tp: TopicPartition) -> bool:
        return False

    def replicas(self, tp: TopicPartition) -> list[int]:
        leader = self.LEADERS[tp.partition].leader
        return [leader, *(b.node_id for b in BROKERS if b.node_id != leader)][:2] if leader >= 0 else [1, 2]

    def partition_states(self, topic: str, partitions: int) -> list[tuple[PartitionLeader | None, list[int]]]:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return [(self.leader(tp), self.replicas(tp)) for tp in tps]

    def add_listener(self, listener: LeadershipListener) -> None:
        raise NotImplementedError

    async def await_leaders(self, partitions: Sequence[TopicPartition], timeout_s: float) -> bool:
        return True  # a fixed view: the new topics' leaders are not its subject

    async def unregister(self, node_id: int) -> Unregistered:
        raise NotImplementedError


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    state = await broker_state(t=3)
    state.cluster = ThreeBrokers()
    assert isinstance(state.cluster, ClusterView)
    return state


def batch() -> bytes:
    return bytes(build_batch([Record(value=b"v")]))


async def produce(state: BrokerState, partition: int) -> Any:
    r = await call(state, ApiKey.PRODUCE, 9, acks=-1, timeout=1000, transactional_id=None,
                   topic_data=[{"name": "t", "partition_data": [{"index": partition, "records": batch()}]}])
    return r.responses[0].partition_responses[0]


async def fetch(state: BrokerState, partition: int, current_leader_epoch: int) -> Any:
    r = await call(state, ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20,
                   isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                   topics=[{"topic": "t", "partitions": [
                       {"partition": partition, "current_leader_epoch": current_leader_epoch, "fetch_offset": 0,
                        "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}])
    return r.responses[0].partitions[0]


async def test_metadata_lists_the_live_brokers_and_each_partitions_leader(state: BrokerState) -> None:
    r = await call(state, ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                   include_topic_authorized_operations=False)
    host, port = state.config.advertised  # this broker: the address of the client's listener
    assert [(b.node_id, b.host, b.port, b.rack) for b in r.brokers] == [
        (1, host, port, None), (2, "h2", 9092, "r2"), (3, "h3", 9093, None)]
    [topic] = r.topics
    got = [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes))
           for p in topic.partitions]
    assert got == [(0, E.none, 1, 5, [1, 2], [1, 2]), (1, E.none, 2, 3, [2, 1], [2, 1]),
                   (2, E.leader_not_available, -1, 4, [1, 2], [1, 2])]


async def test_describe_cluster_lists_the_live_brokers(state: BrokerState) -> None:
    r = await call(state, ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False, endpoint_type=1)
    assert [b.broker_id for b in r.brokers] == [1, 2, 3]
    assert r.controller_id == 1


@pytest.mark.parametrize("include", [False, True])
async def test_describe_cluster_v2_adds_fenced_brokers_only_when_asked(state: BrokerState, include: bool) -> None:
    """KIP-1073, as KafkaApis.handleDescribeCluster: fenced brokers only with include_fenced_brokers,
    each flagged is_fenced, in node id order with the live ones; Metadata never lists them."""
    r = await call(state, ApiKey.DESCRIBE_CLUSTER, 2, include_cluster_authorized_operations=False, endpoint_type=1,
                   include_fenced_brokers=include)
    got = [(b.broker_id, b.host, b.port, b.rack, b.is_fenced) for b in r.brokers]
    host, port = state.config.advertised
    live = [(1, host, port, None, False), (2, "h2", 9092, "r2", False), (3, "h3", 9093, None, False)]
    assert got == ([(0, "h0", 9090, "r0", True), *live, (4, "h4", 9094, None, True)] if include else live)
    metadata = await call(state, ApiKey.METADATA, 13, topics=[], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
    assert [b.node_id for b in metadata.brokers] == [1, 2, 3] and metadata.error_code is E.none


async def test_produce_goes_to_the_leader_only(state: BrokerState) -> None:
    assert (await produce(state, 0)).error_code is E.none
    for partition in (1, 2):
        refused = await produce(state, partition)
        assert refused.error_code is E.not_leader_or_follower
        assert refused.base_offset == -1
    assert "led by broker 2, not broker 1" in (await produce(state, 1)).error_message


@pytest.mark.parametrize(("partition", "epoch", "code"), [
    (0, -1, E.none), (0, 5, E.none), (0, 4, E.fenced_leader_epoch), (0, 6, E.unknown_leader_epoch),
    # Kafka checks the epoch first: a follower that knows epoch 3 still says NOT_LEADER_OR_FOLLOWER.
    (1, 3, E.not_leader_or_follower), (1, 2, E.fenced_leader_epoch), (1, -1, E.not_leader_or_follower),
    (2, -1, E.not_leader_or_follower)])
async def test_fetch_checks_the_current_leader_epoch_then_leadership(
        state: BrokerState, partition: int, epoch: int, code: ErrorCode) -> None:
    assert (await fetch(state, partition, epoch)).error_code is code


@pytest.mark.parametrize("version", [15, 16, 17, 18])
async def test_fetch_v16_names_the_current_leader_and_its_endpoint(state: BrokerState, version: int) -> None:
    """KIP-951: from v16 a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH partition carries the
    leader and its epoch, and the response the leaders' addresses on the client's listener (this
    broker's own for t-0's fenced epoch); t-2 has no leader: (-1, 4) and no endpoint. Before v16
    neither is sent."""
    topic_id = state.logs.topics["t"].topic_id
    r = await call(state, ApiKey.FETCH, version, replica_state={"replica_id": -1, "replica_epoch": -1},
                   max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                   forgotten_topics_data=[], rack_id="", topics=[{"topic_id": topic_id, "partitions": [
                       {"partition": p, "current_leader_epoch": epoch, "fetch_offset": 0, "last_fetched_epoch": -1,
                        "log_start_offset": -1, "partition_max_bytes": 1 << 20}
                       for p, epoch in ((0, 4), (1, -1), (2, -1))]}])
    got = [(p.partition_index, p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch)
           for p in r.responses[0].partitions]
    codes = [(0, E.fenced_leader_epoch), (1, E.not_leader_or_follower), (2, E.not_leader_or_follower)]
    if version < 16:
        assert got == [(*c, -1, -1) for c in codes]
        return
    assert got == [(*codes[0], 1, 5), (*codes[1], 2, 3), (*codes[2], -1, 4)]
    host, port = state.config.advertised
    assert sorted((n.node_id, n.host, n.port, n.rack) for n in r.node_endpoints) == [(1, host, port, None),
                                                                                      (2, "h2", 9092, "r2")]


async def test_list_offsets_answers_the_leader_epoch(state: BrokerState) -> None:
    partitions = [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1} for p in (0, 1)]
    r = await call(state, ApiKey.LIST_OFFSETS, 9, replica_id=-1, isolation_level=0,
                   topics=[{"name": "t", "partitions": partitions}])
    got = [(p.error_code, p.leader_epoch, p.offset) for p in r.topics[0].partitions]
    assert got == [(E.none, 5, 0), (E.not_leader_or_follower, -1, -1)]


async def test_offset_for_leader_epoch_caps_the_epoch_at_the_partitions(state: BrokerState) -> None:
    assert (await produce(state, 0)).error_code is E.none
    r = await call(state, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=[{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 5, "leader_epoch": e} for e in (2, 5, 9)] + [
        {"partition": 1, "current_leader_epoch": -1, "leader_epoch": 3}]}])
    got = [(p.error_code, p.leader_epoch, p.end_offset) for p in r.topics[0].partitions]
    assert got == [(E.none, 2, 1), (E.none, 5, 1), (E.none, 5, 1), (E.not_leader_or_follower, -1, -1)]


async def test_the_local_view_leads_every_partition_at_epoch_zero(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=2)
    view = state.cluster
    assert isinstance(view, LocalClusterView)
    host, port = state.config.advertised
    assert view.live_brokers() == [BrokerEndpoint(state.node_id, host, port, None, (("PLAINTEXT", host, port),))]
    assert view.leader(TopicPartition("t", 1)) == PartitionLeader(state.node_id, 0)
    assert view.leader(TopicPartition("t", 2)) is None and view.leader(TopicPartition("x", 0)) is None
    assert view.replicas(TopicPartition("t", 0)) == [state.node_id]
    # in bulk, as Metadata asks: what leader() and replicas() say of each partition
    for topic, count in (("t", 3), ("x", 2), ("t", 0)):
        tps = [TopicPartition(topic, p) for p in range(count)]
        assert view.partition_states(topic, count) == [(view.leader(tp), view.replicas(tp)) for tp in tps]


async def test_the_local_view_announces_every_partition_to_a_listener(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=2, u=1)
    elected: list[tuple[TopicPartition, int]] = []
    done = asyncio.Event()

    class Listener:
        async def on_elected(self, tp: TopicPartition, leader_epoch: int) -> None:
            elected.append((tp, leader_epoch))
            if len(elected) == 3:
                done.set()

        async def on_resigned(self, tp: TopicPartition) -> None:
            raise AssertionError("a local broker never resigns")

    state.cluster.add_listener(Listener())
    await done.wait()
    assert sorted(elected) == [(TopicPartition("t", 0), 0), (TopicPartition("t", 1), 0), (TopicPartition("u", 0), 0)]


async def create(state: BrokerState, name: str, replication_factor: int) -> Any:
    r = await call(state, ApiKey.CREATE_TOPICS, 7, timeout=5000, validate_only=False, topics=[
        {"name": name, "num_partitions": 1, "replication_factor": replication_factor, "assignments": [],
         "configs": []}])
    return r.topics[0]


async def test_a_replication_factor_up_to_the_live_brokers_is_accepted(state: BrokerState) -> None:
    created = [await create(state, "r3", 3), await create(state, "rd", -1)]
    assert [(t.error_code, t.replication_factor) for t in created] == [(E.none, 3), (E.none, 1)]
    refused = await create(state, "r4", 4)
    assert refused.error_code is E.invalid_replication_factor
    assert refused.error_message == "replication factor 4 is larger than the 3 available brokers"


async def test_a_single_node_accepts_a_replication_factor_of_one(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state()
    assert (await create(state, "one", 1)).error_code is E.none
    refused = await create(state, "two", 2)
    assert (refused.error_code, refused.error_message) == (
        E.invalid_replication_factor, "replication factor 2 is larger than the 1 available broker")
    assert (await create(state, "zero", 0)).error_code is E.invalid_replication_factor


def test_the_lease_views_bulk_answer_is_what_it_says_per_partition() -> None:
    view = LeaseView(node_id=1)
    view.update(ClusterSnapshot(brokers=BROKERS, partitions=[
        PartitionLease(TopicPartition("t", 0), 1, 4, 2),  # this broker's row, but not served: leaderless
        PartitionLease(TopicPartition("t", 1), 2, 3, 2),
        PartitionLease(TopicPartition("t", 2), 3, 1, 3),
        PartitionLease(TopicPartition("t", 3), 2, 3, 1),
        PartitionLease(TopicPartition("t", 4), -1, 2, 2)]))
    view.serving[TopicPartition("t", 5)] = 7  # served here, no row yet
    tps = [TopicPartition("t", p) for p in range(7)]
    states = view.partition_states("t", 7)
    assert states == [(view.leader(tp), view.replicas(tp)) for tp in tps]
    assert states[1] == (PartitionLeader(2, 3), [2, 1]) and states[2] == (PartitionLeader(3, 1), [3, 1, 2])
    assert states[5] == (PartitionLeader(1, 7), [1]) and states[6] == (None, [])


async def test_alter_partition_reassignments_accepts_the_registered_brokers(state: BrokerState) -> None:
    # Kafka's controller accepts any registered brokers; eosbroker's cluster answered every broker
    # but itself with INVALID_REPLICA_ASSIGNMENT "eosbroker is a single node" (KafkaJS's
    # alterPartitionReassignments.spec against three brokers over PostgreSQL).
    parts = [{"partition_index": 0, "replicas": [2, 3]}, {"partition_index": 1, "replicas": [3, 1]},
             {"partition_index": 2, "replicas": [4]}]
    response = await call(state, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, timeout=1000,
                          topics=[{"name": "t", "partitions": parts}])
    results = response.responses[0].partitions
    assert [r.error_code for r in results] == [E.none, E.none, E.invalid_replica_assignment]
    assert "broker 4, but no such broker is registered" in results[2].error_message
    listed = await call(state, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=None)
    assert listed.error_code == E.none and listed.topics == ()
