"""One broker of three cut off by a real network fault: broker 1 reaches PostgreSQL and the object
store only through toxiproxy (tests/toxiproxy.py), brokers 2 and 3 directly. A transactional
confluent-kafka producer commits all along. Under latency broker 1 goes on leading and serving;
under a blackhole (nothing gets through, nothing is closed) it acknowledges nothing, its partitions
move to the others once its lease lapses and the producer carries on there; healed, broker 1
registers again, takes its share back and serves. Every committed record is read exactly once at
read_committed, none of an aborted transaction, and no offset is written twice. Then the object
store's path alone blackholed (PostgreSQL still reached): broker 1 acknowledges nothing while an
idempotent producer's records to brokers 2 and 3 go on being acknowledged, and once healed its
own are too, each once, at offsets neither reused nor skipped. And the store's path alone
blackholed under the transactional producer: broker 1 answers a retriable error, and once healed
the transactions go on, every committed record read exactly once."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from confluent_kafka import KafkaException, Producer

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.e2e.cluster.conftest import CLUSTER_SETTINGS, WAIT_S, Cluster, wait_until
from tests.e2e.cluster.test_failover import batch, create_topic, led_by, raw_produce
from tests.e2e.objects.conftest import ObjectCluster
from tests.e2e.txn_clients import confluent_read
from tests.s3_server import S3Server
from tests.toxiproxy import Toxiproxy

pytestmark = pytest.mark.e2e

CUT = 1  # the broker behind the proxies


class ProxiedCluster(ObjectCluster):
    """An object-store cluster whose broker CUT uses other settings (the proxies' addresses)."""

    def __init__(self, url: str, root: Path, store_settings: dict[str, str], proxied: dict[str, str]) -> None:
        super().__init__(url, root, store_settings)
        self.proxied = proxied

    def start(self, *node_ids: int, settings: dict[str, str] | None = None) -> Cluster:
        if CUT in node_ids and CUT not in self.brokers:  # Cluster.start reuses it with these settings
            self.brokers[CUT] = BrokerProcess(self.root / f"node{CUT}", {
                **CLUSTER_SETTINGS, **self.store_settings, **(settings or {}), "node.id": str(CUT), **self.proxied})
        return super().start(*node_ids, settings=settings)


@pytest.fixture(scope="module")
def toxiproxy() -> Iterator[Toxiproxy]:
    with Toxiproxy() as server:
        yield server


@pytest.fixture
def paths(toxiproxy: Toxiproxy, pg_url: str, s3_server: S3Server) -> Iterator[dict[str, str]]:
    """Proxies to PostgreSQL ("pg") and to the object store ("s3"), by name."""
    names = {kind: f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("pg", "s3")}
    ports = {kind: toxiproxy.proxy(name, urlsplit(url).netloc.rsplit("@", 1)[-1])
             for (kind, name), url in zip(names.items(), (pg_url, s3_server.endpoint), strict=True)}
    yield {**names, "pg_port": str(ports["pg"]), "s3_port": str(ports["s3"])}
    for name in names.values():
        toxiproxy.remove(name)


@pytest.fixture
def cluster(pg_url: str, tmp_path: Path, s3_server: S3Server, s3_bucket: str,
            paths: dict[str, str]) -> Iterator[ProxiedCluster]:
    db = urlsplit(pg_url)
    proxied = {"cluster.url": db._replace(netloc=f"{db.username}@127.0.0.1:{paths['pg_port']}").geturl(),
               "cluster.object.store.endpoint": f"http://127.0.0.1:{paths['s3_port']}"}
    c = ProxiedCluster(pg_url, tmp_path, s3_server.broker_settings(s3_bucket), proxied)
    yield c
    problems = c.stop_all()
    assert not problems, "a broker misbehaved; declare what the test provokes with expect_log(regex):\n" \
        + "\n".join(problems)


class Transactions:
    """A transactional confluent-kafka producer committing transactions of fresh values in a thread
    until stopped; what it committed, what it aborted, and the error that ended it early, if any."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        # librdkafka's default timeouts: broker 1 cut off answers what it took by the time its lease
        # lapses, so the client retries at the new leader or coordinator well within them.
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"cut-{uuid.uuid4().hex[:8]}",
                                  "linger.ms": 5})
        self.producer.init_transactions(WAIT_S)
        self.topic = topic
        self.committed: list[bytes] = []
        self.aborted: list[bytes] = []
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Transactions:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT_S * 4)
        assert not self._thread.is_alive(), "the producer's last transaction did not end"

    def _run(self) -> None:
        n = 0
        try:
            while not self._stop.is_set():
                values = [b"%d" % i for i in range(n, n + 20)]
                n += 20
                self.producer.begin_transaction()
                for value in values:
                    self.producer.produce(self.topic, key=value, value=value)
                (self.committed if self._end() else self.aborted).extend(values)
        except BaseException as e:  # noqa: BLE001  the test reports it
            self.failure = e

    def _end(self) -> bool:
        """Commit, retrying what librdkafka calls retriable; abort if it says the transaction must."""
        while True:
            try:
                self.producer.commit_transaction(WAIT_S)
                return True
            except KafkaException as e:
                error: Any = e.args[0]
                if error.txn_requires_abort():
                    break
                if not error.retriable():
                    raise
        while True:
            try:
                self.producer.abort_transaction(WAIT_S)
                return False
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise

    def commits_more(self, count: int, what: str) -> None:
        """Wait until `count` more transactions have committed."""
        want = len(self.committed) + 20 * count
        wait_until(lambda: len(self.committed) >= want or self.failure is not None, what, timeout=WAIT_S * 2)
        assert self.failure is None, self.failure


def _answer(bootstrap: str, topic: str, partition: int, value: bytes) -> tuple[ErrorCode, int] | None:
    """A Produce of one record (acks=all): (error code, base offset), or None if no answer came."""
    try:
        part = raw_produce(bootstrap, topic, partition, batch(value))
    except OSError:  # timed out, or the connection closed
        return None
    return part.error_code, part.base_offset


def _led_elsewhere(cluster: Cluster, topic: str, via: int) -> bool:
    return all(leader not in (CUT, -1) for leader, _ in cluster.leaders(topic, via).values())


def _started(cluster: Cluster) -> int:
    """Three brokers, the producer's topic "cut" (6 partitions) and "probe" (3), broker 1 leading
    part of each: the probe partition it leads."""
    cluster.start(1, 2, 3)
    create_topic(cluster, "cut", 6)
    create_topic(cluster, "probe", 3)
    [probed] = led_by(cluster.settled("probe"), CUT)
    assert led_by(cluster.settled("cut"), CUT), "broker 1 leads part of the producer's topic"
    return probed


def test_a_broker_cut_off_by_latency_then_a_blackhole_acknowledges_nothing_and_rejoins(
    cluster: ProxiedCluster, toxiproxy: Toxiproxy, paths: dict[str, str]
) -> None:
    probed = _started(cluster)
    cut = cluster.brokers[CUT]
    assert _answer(cut.bootstrap, "probe", probed, b"direct") == (ErrorCode.none, 0)
    names = (paths["pg"], paths["s3"])
    with Transactions(cluster.bootstrap(), "cut") as txns:
        txns.commits_more(3, "transactions before any fault")
        for name in names:
            toxiproxy.add_latency(name, 100, jitter_ms=20)
        txns.commits_more(3, "transactions under latency")
        assert _answer(cut.bootstrap, "probe", probed, b"slow") == (ErrorCode.none, 1)  # slower, still served
        assert led_by(cluster.leaders("cut", 2), CUT), "latency alone moved nothing"
        _blackholed_then_healed(cluster, toxiproxy, names, txns, probed)
    assert txns.failure is None, txns.failure
    cluster.settled("probe")
    back = led_by(cluster.leaders("probe", CUT), CUT)
    assert back, "broker 1 leads its share of probe again"
    served = _answer(cut.bootstrap, "probe", back[0], b"back")
    assert served is not None and served[0] is ErrorCode.none, served
    _read_exactly(cluster, txns)
    probe = confluent_read(cluster.bootstrap(), {"probe": 3}, "read_committed", 4)
    assert sorted((o, v) for _, p, o, v in probe if p == probed) == [(0, b"direct"), (1, b"slow"), (2, b"moved")] \
        + ([(3, b"back")] if back[0] == probed else [])
    assert cut.logged("lease lapsed")


def _blackholed_then_healed(cluster: Cluster, toxiproxy: Toxiproxy, names: tuple[str, ...], txns: Transactions,
                            probed: int) -> None:
    """Blackhole broker 1's paths: it acknowledges nothing, its partitions move once its lease
    lapses and the producer goes on at their new leaders; healed, broker 1 leads again."""
    for name in names:
        toxiproxy.blackhole(name)
    answered = _answer(cluster.brokers[CUT].bootstrap, "probe", probed, b"cut off")
    assert answered is None or answered[0] is not ErrorCode.none, answered  # it could not commit it
    wait_until(lambda: _led_elsewhere(cluster, "cut", 2) and _led_elsewhere(cluster, "probe", 2),
               "broker 1's partitions moving to brokers 2 and 3")
    txns.commits_more(5, "transactions with broker 1 cut off")
    successor = cluster.leaders("probe", 2)[probed][0]
    assert _answer(cluster.brokers[successor].bootstrap, "probe", probed, b"moved") == (ErrorCode.none, 2)
    for name in names:
        toxiproxy.heal(name)
    wait_until(lambda: CUT in {leader for leader, _ in cluster.leaders("cut", 2).values()},
               "broker 1 leading part of the topic again")
    txns.commits_more(3, "transactions after the heal")


def _read_exactly(cluster: Cluster, txns: Transactions) -> None:
    """Every committed value once at read_committed, nothing of an aborted transaction, each
    partition's offsets distinct and its values in the order they were sent."""
    rows = confluent_read(cluster.bootstrap(), {"cut": 6}, "read_committed", len(txns.committed))
    values = Counter(v for _, _, _, v in rows)
    assert not [v for v, n in values.items() if n > 1], "written twice"
    assert set(values) == set(txns.committed), (sorted(set(txns.committed) - set(values))[:10],
                                                sorted(set(values) - set(txns.committed))[:10])
    for p in range(6):
        mine = sorted((o, int(v)) for _, part, o, v in rows if part == p)
        assert len({o for o, _ in mine}) == len(mine), f"partition {p}: an offset holds two records"
        assert [v for _, v in mine] == sorted(v for _, v in mine), f"partition {p} out of order"


class Appends:
    """An idempotent confluent-kafka producer sending to every partition in turn in a thread until
    stopped; the (partition, value) pairs acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
        self.topic, self.partitions = topic, partitions
        self.acked: list[tuple[int, bytes]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append((msg.partition(), msg.value()))
        else:
            self.errors.append(str(err))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            for i in range(n, n + 30):
                self.producer.produce(self.topic, value=b"%d" % i, partition=i % self.partitions,
                                      on_delivery=self._delivered)
            n += 30
            self.producer.poll(0.05)

    def __enter__(self) -> Appends:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT_S)
        assert self.producer.flush(WAIT_S * 3) == 0, "records left undelivered"

    def acked_more(self, count: int, partitions: set[int], what: str) -> None:
        """Wait until `count` more records of `partitions` have been acknowledged."""
        want = sum(1 for p, _ in self.acked if p in partitions) + count
        wait_until(lambda: sum(1 for p, _ in list(self.acked) if p in partitions) >= want, what, timeout=WAIT_S * 2)


def test_a_broker_cut_off_from_the_store_alone_acknowledges_nothing_while_the_others_go_on(
    cluster: ProxiedCluster, toxiproxy: Toxiproxy, paths: dict[str, str]
) -> None:
    cluster.start(1, 2, 3)
    create_topic(cluster, "store-cut", 3)
    [mine] = led_by(cluster.settled("store-cut"), CUT)
    cut = cluster.brokers[CUT]
    assert _answer(cut.bootstrap, "store-cut", mine, b"direct")[0] is ErrorCode.none  # type: ignore[index]
    others = {0, 1, 2} - {mine}
    with Appends(cluster.bootstrap(), "store-cut", 3) as appends:
        appends.acked_more(100, {0, 1, 2}, "acknowledgements before the fault")
        toxiproxy.blackhole(paths["s3"])
        answered = _answer(cut.bootstrap, "store-cut", mine, b"cut off")
        assert answered is None or answered[0] is not ErrorCode.none, answered  # it could not store it
        appends.acked_more(300, others, "acknowledgements of brokers 2 and 3 while broker 1 is cut off")
        toxiproxy.heal(paths["s3"])
        appends.acked_more(100, {mine}, "broker 1's acknowledgements after the heal")
    assert appends.errors == [], appends.errors[:5]  # librdkafka retried whatever was refused
    assert cut.logged("flushes to the object store fail")
    rows = confluent_read(cluster.bootstrap(), {"store-cut": 3}, "read_committed", len(appends.acked) + 1)
    values = Counter((p, v) for _, p, _, v in rows)
    assert not [pv for pv, n in values.items() if n > 1], "written twice"
    assert set(appends.acked) <= set(values), "acknowledged but lost"
    assert set(values) - set(appends.acked) <= {(mine, b"direct"), (mine, b"cut off")}
    for p in range(3):
        offsets = sorted(o for _, part, o, _ in rows if part == p)
        assert offsets == list(range(len(offsets))), f"partition {p}: offsets reused or skipped"


RETRIABLE = {ErrorCode.kafka_storage_error, ErrorCode.not_leader_or_follower, ErrorCode.request_timed_out}


def test_a_broker_cut_off_from_the_store_alone_under_transactions_answers_retriable_errors_and_loses_nothing(
    cluster: ProxiedCluster, toxiproxy: Toxiproxy, paths: dict[str, str]
) -> None:
    """The object store's path blackholed (connections stay open, nothing gets through) while a
    transactional producer commits: broker 1 still holds its lease (PostgreSQL answers) and
    acknowledges nothing of what it cannot store, answering a retriable error if anything;
    healed, the transactions go on, and every committed record is read exactly once at
    read_committed, none of an aborted one."""
    probed = _started(cluster)
    cut = cluster.brokers[CUT]
    with Transactions(cluster.bootstrap(), "cut") as txns:
        txns.commits_more(3, "transactions before the fault")
        toxiproxy.blackhole(paths["s3"])
        answered = _answer(cut.bootstrap, "probe", probed, b"cut off")
        toxiproxy.heal(paths["s3"])
        # A flush's PUT is given up after one lease (3 s) though PostgreSQL renews the lease, so
        # the raw client (15 s) gets its answer; the S3 client's own timeout is 30 s.
        assert answered is not None and answered[0] in RETRIABLE, answered
        txns.commits_more(3, "transactions after the heal")
    assert txns.failure is None, txns.failure
    assert cut.logged("flushes to the object store fail")
    _read_exactly(cluster, txns)
