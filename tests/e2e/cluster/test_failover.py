"""Several brokers over one PostgreSQL (docs/cluster.md), with real clients: leadership spread and
followed, a leader killed (-9) or paused past its lease, the database restarted under load, a broker
restarted on an empty data dir. Acknowledged records are never lost, never written twice, and keep
their order; a broker that lost its lease has its appends refused."""

from __future__ import annotations

import datetime
import threading
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.e2e.cluster.conftest import WAIT_S, Cluster, wait_until
from tests.e2e.txn_clients import confluent_read
from tests.kafka_wire import RawClient
from tests.pg_server import PostgresServer

pytestmark = pytest.mark.e2e


def create_topic(cluster: Cluster, name: str, partitions: int, replication_factor: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    for future in admin.create_topics([NewTopic(name, partitions, replication_factor)]).values():
        future.result(WAIT_S)


class Sender:
    """An idempotent confluent-kafka producer that remembers what was acknowledged."""

    def __init__(self, bootstrap: str, **extra: Any) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                                  "message.timeout.ms": 120_000, **extra})
        self.acked: list[bytes] = []
        self.errors: list[str] = []

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append(msg.value())
        else:
            self.errors.append(str(err))

    def send(self, topic: str, values: range, partitions: int) -> None:
        for i in values:
            self.producer.produce(topic, value=b"%d" % i, key=b"%d" % (i % partitions), on_delivery=self._delivered)
            self.producer.poll(0)

    def flush(self) -> None:
        assert self.producer.flush(WAIT_S * 2) == 0, "messages left undelivered"


def read_all(cluster: Cluster, topic: str, partitions: int, expected: int, *via: int) -> list[tuple[int, int, bytes]]:
    rows = confluent_read(cluster.bootstrap(*via), {topic: partitions}, "read_uncommitted", expected)
    return [(p, offset, value) for _, p, offset, value in rows]


def exactly_once_in_order(rows: list[tuple[int, int, bytes]], acked: list[bytes], partitions: int) -> None:
    values = [v for _, _, v in rows]
    duplicated = [v for v, n in Counter(values).items() if n > 1]
    assert not duplicated, f"written twice: {duplicated[:10]}"
    assert set(acked) <= set(values), f"acknowledged but lost: {sorted(set(acked) - set(values))[:10]}"
    for p in range(partitions):
        sent = [int(v) for part, _, v in sorted(rows, key=lambda r: (r[0], r[1])) if part == p]
        assert sent == sorted(sent), f"partition {p} out of order"
        offsets = [o for part, o, _ in rows if part == p]
        assert sorted(offsets) == list(range(len(offsets))), f"partition {p}: offsets reused or skipped"


def raw_produce(bootstrap: str, topic: str, partition: int, records: bytes) -> Any:
    with RawClient(bootstrap) as client:
        request = ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10),
                                 topic_data=(TopicProduceData(name=topic, partition_data=(
                                     PartitionProduceData(index=partition, records=records),)),))
        [topic_response] = client.request(request).responses
        [part] = topic_response.partition_responses
        return part


def batch(*values: bytes, producer_id: int = -1, base_sequence: int = -1) -> bytes:
    return bytes(build_batch([Record(value=v) for v in values], producer_id=producer_id,
                             producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence))


def led_by(leaders: dict[int, tuple[int, int]], node_id: int) -> list[int]:
    return [p for p, (leader, _) in leaders.items() if leader == node_id]


def test_three_brokers_share_the_partitions_and_serve_any_client(cluster: Cluster) -> None:
    cluster.start(1, 2, 3)
    create_topic(cluster, "spread", 6, replication_factor=3)
    leaders = cluster.settled("spread")
    assert sorted(Counter(leader for leader, _ in leaders.values()).values()) == [2, 2, 2]
    [entry] = cluster.metadata(3, "spread").topics
    for p in entry.partitions:
        assert p.replica_nodes[0] == p.leader_id and sorted(p.replica_nodes) == [1, 2, 3]
        assert p.leader_epoch >= 1
    sender = Sender(cluster.bootstrap(1))
    sender.send("spread", range(300), 6)
    sender.flush()
    rows = read_all(cluster, "spread", 6, 300, 3)
    exactly_once_in_order(rows, sender.acked, 6)
    assert len(rows) == 300


def test_a_killed_leader_is_replaced_and_its_restart_on_an_empty_dir_loses_nothing(cluster: Cluster) -> None:
    cluster.start(1, 2, 3)
    create_topic(cluster, "failover", 3)
    leaders = cluster.settled("failover")
    victim = leaders[0][0]
    survivor = next(n for n in cluster.live() if n != victim)
    sender = Sender(cluster.bootstrap())
    sender.send("failover", range(0, 1500), 3)
    cluster.kill(victim, empty_data_dir=True)
    sender.send("failover", range(1500, 3000), 3)
    sender.flush()
    assert sender.errors == [] and len(sender.acked) == 3000
    after = cluster.settled("failover")
    assert after[0][1] > leaders[0][1], "the new leader's epoch is newer"
    exactly_once_in_order(read_all(cluster, "failover", 3, 3000, survivor), sender.acked, 3)
    # The killed broker comes back with nothing on its disk and takes its share again.
    cluster.start(victim)
    wait_until(lambda: victim in {leader for leader, _ in cluster.leaders("failover", victim).values()},
               f"broker {victim} leading again")
    exactly_once_in_order(read_all(cluster, "failover", 3, 3000, victim), sender.acked, 3)


def test_a_leader_paused_past_its_lease_has_its_appends_refused(cluster: Cluster) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "paused", 2)
    leaders = cluster.settled("paused")
    [partition] = led_by(leaders, 1)
    one, two = cluster.brokers[1], cluster.brokers[2]
    assert raw_produce(one.bootstrap, "paused", partition, batch(b"before")).base_offset == 0
    one.pause()
    try:
        wait_until(lambda: cluster.leaders("paused", 2)[partition][0] == 2, "broker 2 taking the partition")
        assert raw_produce(two.bootstrap, "paused", partition, batch(b"while paused")).base_offset == 1
    finally:
        one.resume()
    refused = raw_produce(one.bootstrap, "paused", partition, batch(b"stale leader"))
    assert refused.error_code is ErrorCode.not_leader_or_follower
    rows = read_all(cluster, "paused", 2, 2, 2)
    assert sorted((o, v) for p, o, v in rows if p == partition) == [(0, b"before"), (1, b"while paused")]
    # Broker 1 registers again and the clients end on whoever leads now, with nothing lost.
    cluster.settled("paused")
    assert one.logged("lease")


def test_an_idempotent_retry_reaching_the_new_leader_is_deduplicated(cluster: Cluster) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "dedup", 2)
    [partition] = led_by(cluster.settled("dedup"), 1)
    first = batch(b"a", b"b", b"c", producer_id=424242, base_sequence=0)
    assert raw_produce(cluster.brokers[1].bootstrap, "dedup", partition, first).base_offset == 0
    cluster.kill(1)  # before the producer saw the answer, say: it retries at the new leader
    wait_until(lambda: cluster.leaders("dedup", 2)[partition][0] == 2, "broker 2 taking the partition")
    retry = raw_produce(cluster.brokers[2].bootstrap, "dedup", partition, first)
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
    following = batch(b"d", producer_id=424242, base_sequence=3)
    assert raw_produce(cluster.brokers[2].bootstrap, "dedup", partition, following).base_offset == 3
    rows = read_all(cluster, "dedup", 2, 4, 2)
    assert [v for p, _, v in sorted(rows) if p == partition] == [b"a", b"b", b"c", b"d"]


def test_a_postgresql_restart_while_producing_loses_nothing_acknowledged(
        cluster: Cluster, pg_server: PostgresServer) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "outage", 2)
    cluster.settled("outage")
    sender = Sender(cluster.bootstrap())
    stop = threading.Event()
    sent = 0

    def produce() -> None:  # without pause, from before the restart until well after it
        nonlocal sent
        while not stop.is_set():
            sender.send("outage", range(sent, sent + 50), 2)
            sent += 50
            sender.producer.poll(0.02)

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        wait_until(lambda: len(sender.acked) >= 300, "the first acknowledgements")
        pg_server.restart("immediate")
        before = len(sender.acked)
        wait_until(lambda: len(sender.acked) >= before + 500, "acknowledgements after the restart")
    finally:
        stop.set()
        thread.join(WAIT_S)
    sender.flush()
    assert sender.errors == [], sender.errors[:5]  # librdkafka retried whatever was refused
    assert len(sender.acked) == sent
    cluster.settled("outage")
    exactly_once_in_order(read_all(cluster, "outage", 2, sent, 2), sender.acked, 2)


def test_a_database_outage_longer_than_the_lease_drops_leadership_until_it_returns(
        cluster: Cluster, pg_server: PostgresServer) -> None:
    cluster.start(1, 2)
    create_topic(cluster, "longer", 2)
    cluster.settled("longer")
    sender = Sender(cluster.bootstrap())
    sender.send("longer", range(0, 200), 2)
    sender.flush()
    pg_server.stop("immediate")
    try:
        # Each broker's own timer ends its leadership: no heartbeat reached the database.
        wait_until(lambda: all(p.logged("lease lapsed") for p in cluster.brokers.values()), "leases lapsing")
        for node_id in cluster.live():
            [entry] = cluster.metadata(node_id, "longer").topics
            assert all(p.leader_id != node_id for p in entry.partitions), "still claims to lead"
    finally:
        pg_server.start()
    cluster.settled("longer")
    sender.send("longer", range(200, 400), 2)
    sender.flush()
    assert sender.errors == [] and len(sender.acked) == 400
    exactly_once_in_order(read_all(cluster, "longer", 2, 400, 1), sender.acked, 2)
