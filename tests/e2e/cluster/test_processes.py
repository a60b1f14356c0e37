"""`python -m broker --processes 4` (docs/processes.md), as a local set sharing one data dir with
no other service and over cluster mode (PostgreSQL): four broker processes on consecutive ports
from one command, reached from the first port, sharing partitions and both
coordinators' shards; transactions across processes read exactly by confluent-kafka, kafka-python
and Java; kill -9 and SIGSTOP of one process under load (the supervisor starts it again; nothing
acknowledged lost, nothing written twice); the whole set stopped with SIGTERM and started again;
Kafka's CLI tools against it."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.cluster.conftest import CLUSTER_SETTINGS
from tests.e2e.cluster.test_cluster_coordinators import transactions_read_exactly
from tests.e2e.cluster.test_failover import Sender, exactly_once_in_order
from tests.e2e.test_metrics import requests
from tests.e2e.txn_clients import confluent_read, plain_producer, txn_producer
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient
from tests.supervised import REPO, Supervised, alive, free_ports, wait_until

pytestmark = pytest.mark.e2e
WAIT_S = 60.0


@pytest.fixture(params=["local", "cluster"])
def settings(request: pytest.FixtureRequest) -> dict[str, str]:
    """A local set (one shared data dir, SQLite inside it) or cluster mode over a fresh database."""
    if request.param == "local":
        return dict(CLUSTER_SETTINGS)  # cluster.lease.ms: the leases in the data dir's database
    return {**CLUSTER_SETTINGS, "cluster.url": request.getfixturevalue("pg_url")}


@pytest.fixture
def four(settings: dict[str, str], tmp_path: Path) -> Iterator[Supervised]:
    """Four supervised processes over fresh storage, not started yet."""
    procs = Supervised(tmp_path, 4, {**settings, "request.timeout.ms": "2000"})
    yield procs
    assert procs.stop() in (0, None)
    assert not procs.problems(), "a process misbehaved:\n" + "\n".join(procs.problems())


def metadata(bootstrap: str, *topics: str) -> object:
    with RawClient(bootstrap) as client:
        return client.request(MetadataRequest(
            topics=tuple(MetadataRequestTopic(name=t, topic_id=None) for t in topics),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))


def start(procs: Supervised) -> Supervised:
    """Start the set and wait until every process lists all of them (each joins on its own)."""
    procs.start()

    def listed(node_id: int) -> list[int]:
        return sorted(b.node_id for b in metadata(f"127.0.0.1:{procs.port_of(node_id)}").brokers)  # type: ignore[attr-defined]

    wait_until(lambda: all(listed(n) == procs.node_ids for n in procs.node_ids), "every process listing the others",
               WAIT_S)
    return procs


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    [entry] = metadata(bootstrap, topic).topics  # type: ignore[attr-defined]
    return {p.partition_index: p.leader_id for p in entry.partitions}


def spread_evenly(procs: Supervised, topic: str, partitions: int) -> dict[int, int]:
    """Wait until every process answers the same leaders, `partitions / 4` partitions each."""
    found: dict[int, int] = {}

    def even() -> bool:
        nonlocal found
        views = [leaders(f"127.0.0.1:{procs.port_of(n)}", topic) for n in procs.node_ids]
        found = views[0]
        counts = Counter(found.values())
        return len(found) == partitions and all(v == found for v in views) and \
            sorted(counts) == procs.node_ids and set(counts.values()) == {partitions // 4}

    wait_until(even, f"{topic} spread evenly over the four processes", WAIT_S)
    return found


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(WAIT_S)


def test_four_processes_are_one_cluster_with_transactions_across_them(four: Supervised, tmp_path: Path) -> None:
    start(four)
    assert len(four.logged(r"broker process \d of 4 \(node \d, pid \d+\) started")) == 4
    brokers = metadata(four.bootstrap).brokers  # type: ignore[attr-defined]
    assert sorted((b.node_id, b.port) for b in brokers) == [(n, four.port_of(n)) for n in four.node_ids]
    create_topic(four.bootstrap, "orders", 8)
    spread_evenly(four, "orders", 8)
    spread_evenly(four, "__transaction_state", 4)  # the coordinators' shards too
    spread_evenly(four, "__consumer_offsets", 4)
    transactions_read_exactly(four.bootstrap, "orders", 8, tmp_path)
    assert four.stop() == 0
    assert len(four.logged(r"INFO node\d broker: stopped cleanly")) == 4
    assert four.logged("every broker process stopped cleanly")


def test_each_process_has_its_own_metrics_and_none_outlives_a_killed_supervisor(settings: dict[str, str],
                                                                                 tmp_path: Path) -> None:
    metrics = free_ports(2)
    procs = start(Supervised(tmp_path, 2, {**settings, "metrics.port": str(metrics)}))
    create_topic(procs.bootstrap, "metered", 2)
    led = {leader: p for p, leader in spread_two(procs, "metered").items()}
    producer = plain_producer(procs.bootstrap)  # bootstraps from process 1, produces to process 2
    for i in range(5):
        producer.produce("metered", b"%d" % i, partition=led[2])
    assert producer.flush(WAIT_S) == 0
    produce_requests = [requests(scrape(metrics + i), "Produce") for i in range(2)]
    assert produce_requests[0] == 0 and produce_requests[1] >= 1, produce_requests
    pids = list(procs.pids.values())
    assert procs.proc is not None
    procs.proc.kill()  # the supervisor, with SIGKILL: the kernel sends its processes SIGTERM
    wait_until(lambda: not any(alive(pid) for pid in pids), "the broker processes exiting", WAIT_S)
    procs.proc.wait()
    assert len(procs.logged(r"INFO node\d broker: stopped cleanly")) == 2
    assert not procs.problems(), procs.problems()


def spread_two(procs: Supervised, topic: str) -> dict[int, int]:
    wait_until(lambda: sorted(leaders(procs.bootstrap, topic).values()) == [1, 2], f"{topic} led by both", WAIT_S)
    return leaders(procs.bootstrap, topic)


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        assert response.status == 200
        text = response.read().decode()
    finally:
        conn.close()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}



def test_a_process_that_cannot_start_stops_the_others(settings: dict[str, str], tmp_path: Path) -> None:
    procs = Supervised(tmp_path, 2, settings)
    with socket.create_server(("127.0.0.1", procs.base_port + 1)):  # the second process's port is taken
        done = subprocess.run(procs.command(), capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert f"eosbroker: cannot listen on 127.0.0.1:{procs.base_port + 1}: address already in use" in out
    assert "broker process 2 of 2 (node 2, pid" in out and "failed to start (exit status 2); stopping the others" in out


def test_a_killed_or_paused_process_is_started_again_and_nothing_acknowledged_is_lost(four: Supervised) -> None:
    start(four)
    create_topic(four.bootstrap, "load", 8)
    spread_evenly(four, "load", 8)
    sender = Sender(four.bootstrap)
    done = threading.Event()
    sent = 0

    def produce() -> None:
        nonlocal sent
        while not done.is_set():
            sender.send("load", range(sent, sent + 50), 8)
            sent += 50
            done.wait(0.05)

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        wait_until(lambda: len(sender.acked) > 500, "records acknowledged before the kill", WAIT_S)
        killed = four.signal(2, signal.SIGKILL)
        four.wait_restarted(2, killed)
        acked = len(sender.acked)
        wait_until(lambda: len(sender.acked) > acked + 500, "records acknowledged after the restart", WAIT_S)
        paused = four.signal(3, signal.SIGSTOP)
        four.wait_restarted(3, paused)
        acked = len(sender.acked)
        wait_until(lambda: len(sender.acked) > acked + 500, "records acknowledged after the pause", WAIT_S)
    finally:
        done.set()
        thread.join()
    sender.flush()
    assert not sender.errors, sender.errors[:5]
    assert four.logged(r"node 2, pid \d+\) was killed by SIGKILL; starting it again")
    assert four.logged(r"node 3, pid \d+\) sent no heartbeat for .* killing it")
    rows = confluent_read(four.bootstrap, {"load": 8}, "read_uncommitted", len(sender.acked))
    exactly_once_in_order([(p, o, v) for _, p, o, v in rows], sender.acked, 8)


def test_the_whole_set_restarts_and_kafka_tools_see_it(four: Supervised) -> None:
    start(four)
    tool = lambda *args: run_tool(args[0], "--bootstrap-server", four.bootstrap, *args[1:], check=True).stdout  # noqa: E731
    tool("kafka-topics", "--create", "--topic", "events", "--partitions", "8", "--replication-factor", "1")
    spread_evenly(four, "events", 8)
    described = tool("kafka-topics", "--describe", "--topic", "events")
    assert {int(line.split("Leader: ")[1].split()[0]) for line in described.splitlines() if "Leader: " in line} \
        == set(four.node_ids)
    producer = txn_producer(four.bootstrap, "events-tx")
    producer.begin_transaction()
    for p in range(8):
        producer.produce("events", value=b"e%d" % p, partition=p)
    producer.commit_transaction(WAIT_S)
    consume_and_commit(four.bootstrap, "auditors", "events", 8)
    assert four.stop() == 0
    start(four)  # the same command again: same ports, same node ids, same data dir or database
    spread_evenly(four, "events", 8)
    assert "events-tx" in tool("kafka-transactions", "list")
    groups = tool("kafka-consumer-groups", "--describe", "--group", "auditors")
    lags = [line.split() for line in groups.splitlines() if line.startswith("auditors ")]
    # Each partition: its record and the commit marker; the group had read the record (the client
    # commits 1 or 2, whether or not it had stepped over the marker yet).
    assert len(lags) == 8 and all(int(row[3]) >= 1 and row[4] == "2" for row in lags), groups
    rows = confluent_read(four.bootstrap, {"events": 8}, "read_committed", 8)
    assert sorted(v for _, _, _, v in rows) == [b"e%d" % p for p in range(8)]


def consume_and_commit(bootstrap: str, group: str, topic: str, count: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    got = 0
    try:
        def polled() -> bool:
            nonlocal got
            msg = consumer.poll(0.2)
            got += msg is not None and msg.error() is None
            return got >= count

        wait_until(polled, f"{count} records of {topic}", WAIT_S)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def set_config(admin: AdminClient, kind: ResourceType, name: str, key: str, value: str) -> None:
    resource = ConfigResource(kind, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(WAIT_S)


def described(admin: AdminClient, kind: ResourceType, name: str, key: str) -> str:
    [future] = admin.describe_configs([ConfigResource(kind, name)]).values()
    return str(future.result(WAIT_S)[key].value)


def test_a_local_sets_acls_configs_and_deleted_topics_are_seen_by_every_process(tmp_path: Path) -> None:
    """What one process of a local set changes, the others answer within a poll: an ACL, a topic
    config and a broker config; a topic deleted through one and created again through another
    starts empty."""
    authorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    procs = start(Supervised(tmp_path, 2, {**CLUSTER_SETTINGS, "super.users": "User:ANONYMOUS",
                                           "authorizer.class.name": authorizer}))
    try:
        first, second = (f"127.0.0.1:{procs.port_of(n)}" for n in procs.node_ids)
        one, two = AdminClient({"bootstrap.servers": first}), AdminClient({"bootstrap.servers": second})
        create_topic(first, "shared", 2)
        binding = AclBinding(ResourceType.TOPIC, "shared", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)
        for future in one.create_acls([binding]).values():
            future.result(WAIT_S)
        # As Kafka's brokers replay the metadata log, the other process reads the change at its next
        # poll of cluster.db (50 ms).
        every_acl = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                     AclPermissionType.ANY)
        wait_until(lambda: two.describe_acls(every_acl).result(WAIT_S) == [binding], "the ACL seen by process 2")
        set_config(one, ResourceType.TOPIC, "shared", "retention.ms", "123456")
        wait_until(lambda: described(two, ResourceType.TOPIC, "shared", "retention.ms") == "123456",
                   "the topic config seen by process 2")
        run_tool("kafka-configs", "--bootstrap-server", first, "--alter", "--entity-type", "brokers",
                 "--entity-default", "--add-config", "log.retention.ms=7200000", check=True)
        wait_until(lambda: described(two, ResourceType.BROKER, "2", "log.retention.ms") == "7200000",
                   "the broker config default seen by process 2")
        producer = plain_producer(first)
        for p in range(2):
            producer.produce("shared", b"old", partition=p)
        assert producer.flush(WAIT_S) == 0
        for future in two.delete_topics(["shared"]).values():
            future.result(WAIT_S)
        wait_until(lambda: "shared" not in one.list_topics(timeout=WAIT_S).topics, "the deletion seen by process 1",
                   WAIT_S)
        create_topic(second, "shared", 2)
        spread_two(procs, "shared")
        assert confluent_read(first, {"shared": 2}, "read_uncommitted", 0) == []
        for p in range(2):
            producer.produce("shared", b"new", partition=p)
        assert producer.flush(WAIT_S) == 0
        rows = confluent_read(first, {"shared": 2}, "read_uncommitted", 2)
        assert sorted((p, o, v) for _, p, o, v in rows) == [(0, 0, b"new"), (1, 0, b"new")]
    finally:
        assert procs.stop() == 0
    assert not procs.problems(), procs.problems()
