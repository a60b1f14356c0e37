"""Leader discovery (KIP-951: Fetch v16+, Produce v10+) in a cluster over PostgreSQL: a fetch or
produce sent to a broker that does not lead the partition is NOT_LEADER_OR_FOLLOWER naming the real
leader, its epoch and its address, so a Kafka 4 client moves without a Metadata round trip; a
fetch with an old leader epoch to the leader is FENCED_LEADER_EPOCH naming the leader itself."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.e2e.cluster.conftest import Cluster
from tests.e2e.cluster.test_failover import create_topic, led_by
from tests.e2e.test_fetch_topic_ids import topic_id
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e


def fetch(bootstrap: str, version: int, partitions: dict[int, int], name: str) -> Any:
    """One Fetch (v13+) of the topic's partitions, each at its current_leader_epoch (-1: none)."""
    with RawClient(bootstrap) as client:
        ident = topic_id(client, name)
        return client.request(build(request_schema(1, version), {
            "replica_state": {"replica_id": -1, "replica_epoch": -1}, "max_wait": 0, "min_bytes": 0,
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
            "forgotten_topics_data": [], "topics": [{"topic_id": ident, "partitions": [
                {"partition": p, "current_leader_epoch": epoch, "fetch_offset": 0, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p, epoch in partitions.items()]}]}))


def test_a_fetch_to_a_broker_not_leading_names_the_leader_and_its_address(cluster: Cluster) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "led", 4, replication_factor=2)
    leaders = cluster.settled("led")
    elsewhere = led_by(leaders, 2)
    here = led_by(leaders, 1)
    assert elsewhere and here, leaders
    other, mine = elsewhere[0], here[0]
    fenced = leaders[mine][1] - 1  # cluster leader epochs start at 1
    host2, port2 = cluster.brokers[2].bootstrap.rsplit(":", 1)
    host1, port1 = cluster.brokers[1].bootstrap.rsplit(":", 1)
    for version in (16, 17, 18):
        r = fetch(cluster.bootstrap(1), version, {other: -1, mine: fenced}, "led")
        got = {p.partition_index: (p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch)
               for p in r.responses[0].partitions}
        assert got == {other: (ErrorCode.not_leader_or_follower, 2, leaders[other][1]),
                       mine: (ErrorCode.fenced_leader_epoch, 1, leaders[mine][1])}, version
        assert sorted((n.node_id, n.host, n.port) for n in r.node_endpoints) == \
            [(1, host1, int(port1)), (2, host2, int(port2))]
    # v15 knows neither field: the same errors, no leader named.
    r = fetch(cluster.bootstrap(1), 15, {other: -1}, "led")
    (p,) = r.responses[0].partitions
    assert (p.error_code, p.current_leader.leader_id) == (ErrorCode.not_leader_or_follower, -1)
    # The leader serves it.
    r = fetch(cluster.bootstrap(2), 18, {other: -1}, "led")
    assert [(p.error_code, p.current_leader.leader_id) for p in r.responses[0].partitions] == [(ErrorCode.none, -1)]
    assert r.node_endpoints == ()


def produce(bootstrap: str, version: int, partition: int, name: str) -> Any:
    """One Produce (acks=1) of one record to the topic's partition, naming the topic by id from v13."""
    with RawClient(bootstrap) as client:
        topic = {"topic_id": topic_id(client, name)} if version >= 13 else {"name": name}
        return client.request(build(request_schema(0, version), {
            "transactional_id": None, "acks": 1, "timeout": 10_000, "topic_data": [{**topic, "partition_data": [
                {"index": partition, "records": bytes(build_batch([Record(value=b"v")]))}]}]}))


def test_a_produce_to_a_broker_not_leading_names_the_leader_and_its_address(cluster: Cluster) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "led", 4, replication_factor=2)
    leaders = cluster.settled("led")
    other = led_by(leaders, 2)[0]
    host2, port2 = cluster.brokers[2].bootstrap.rsplit(":", 1)
    for version in (10, 12, 13):
        r = produce(cluster.bootstrap(1), version, other, "led")
        (p,) = r.responses[0].partition_responses
        assert (p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch) == \
            (ErrorCode.not_leader_or_follower, 2, leaders[other][1]), version
        assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [(2, host2, int(port2))]
    r = produce(cluster.bootstrap(1), 9, other, "led")  # v9 knows neither field
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.not_leader_or_follower
    r = produce(cluster.bootstrap(2), 13, other, "led")  # the leader takes it, naming no one
    (p,) = r.responses[0].partition_responses
    assert (p.error_code, p.current_leader.leader_id, r.node_endpoints) == (ErrorCode.none, -1, ())
