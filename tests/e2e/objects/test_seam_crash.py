"""A broker of three killed at the object-store seam (storage/pg/object_commit.py's fault injection,
EOSBROKER_FAULT_KILL_AFTER_OBJECT_PUT): right after a flush object holding producers' records is
stored and before the commit that would record it. An idempotent and a transactional confluent-kafka
producer keep going through it: what they were not acknowledged is retried at the new leader and
written once, every acknowledged record is read back once and in order (the transactional one's at
read_committed, nothing of an aborted transaction), and the object the dead broker stored is later
deleted by the others' orphan collection."""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from storage.object_store import open_object_store
from storage.pg.object_commit import CRASH_AFTER_PUT_ENV
from tests.e2e.cluster.conftest import WAIT_S, wait_until
from tests.e2e.cluster.test_failover import Sender, create_topic, exactly_once_in_order, led_by, read_all
from tests.e2e.objects.conftest import ObjectCluster
from tests.e2e.txn_clients import confluent_read

pytestmark = pytest.mark.e2e

PARTITIONS = 3
GRACE = {"cluster.object.orphan.grace.ms": "1000"}  # the collector's shortest: orphans go within seconds
KILLED = re.compile(r"fault injection: killed after storing object (\S+) ")


class TransactionalSender:
    """A transactional confluent-kafka producer committing small transactions over every partition
    until stopped; remembers what was committed, aborted, or left unknown by a fatal error."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "seam-txn", "linger.ms": 5})
        self.topic = topic
        self.committed: list[bytes] = []
        self.aborted: list[bytes] = []

    def run(self, stop: threading.Event) -> None:
        self.producer.init_transactions(WAIT_S)
        n = 0
        while not stop.is_set():
            values = [b"%d" % i for i in range(n, n + 2 * PARTITIONS)]
            n += len(values)
            self.producer.begin_transaction()
            for v in values:
                self.producer.produce(self.topic, value=v, partition=int(v) % PARTITIONS)
            self._end(values)

    def _end(self, values: list[bytes]) -> None:
        while True:
            try:
                self.producer.commit_transaction(WAIT_S)
                self.committed += values
                return
            except KafkaException as exc:
                error: Any = exc.args[0]
                if error.txn_requires_abort():
                    self.producer.abort_transaction(WAIT_S)
                    self.aborted += values
                    return
                if not error.retriable():
                    raise


def _read_committed_once_in_order(rows: list[tuple[str, int, int, bytes]], sender: TransactionalSender) -> None:
    values = [v for _, _, _, v in rows]
    assert not [v for v, n in Counter(values).items() if n > 1], "a committed record read twice"
    assert set(sender.committed) <= set(values), f"committed but lost: {set(sender.committed) - set(values)}"
    assert not set(sender.aborted) & set(values), "an aborted record read at read_committed"
    for p in range(PARTITIONS):
        read = [int(v) for _, part, _, v in sorted(rows, key=lambda r: (r[1], r[2])) if part == p]
        assert read == sorted(read), f"partition {p} out of order"


async def _stored(cluster: ObjectCluster) -> set[str]:
    settings = cluster.store_settings
    store = open_object_store(settings["cluster.object.store.url"], endpoint=settings["cluster.object.store.endpoint"],
                              region=settings["cluster.object.store.region"])
    return {i.key async for chunk in store.list("flush/") for i in chunk}


def _start_with_broker_1_armed(cluster: ObjectCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.start(2, 3, settings=GRACE)
    with monkeypatch.context() as env:  # broker 1 dies at its 20th object holding producers' records
        env.setenv(CRASH_AFTER_PUT_ENV, "20")
        cluster.start(1, settings=GRACE)
    for topic in ("seam-idem", "seam-txn"):
        create_topic(cluster, topic, PARTITIONS)
        assert led_by(cluster.settled(topic), 1), f"broker 1 leads none of {topic}"


def test_producers_through_a_broker_killed_between_upload_and_commit_lose_and_duplicate_nothing(
    cluster: ObjectCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    _start_with_broker_1_armed(cluster, monkeypatch)
    idempotent = Sender(cluster.bootstrap())
    transactional = TransactionalSender(cluster.bootstrap(), "seam-txn")
    stop = threading.Event()
    failures: list[BaseException] = []
    sent = 0

    def produce() -> None:
        nonlocal sent
        while not stop.is_set():  # every partition, broker 1's too (keys might all hash elsewhere)
            for i in range(sent, sent + 30):
                idempotent.producer.produce("seam-idem", value=b"%d" % i, partition=i % PARTITIONS,
                                            on_delivery=idempotent.on_delivery)
            sent += 30
            idempotent.producer.poll(0.02)

    def transact() -> None:
        try:
            transactional.run(stop)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=produce), threading.Thread(target=transact)]
    for t in threads:
        t.start()
    try:
        cluster.brokers[1].proc.wait(WAIT_S * 2)  # type: ignore[union-attr]
        acked, committed = len(idempotent.acked), len(transactional.committed)
        wait_until(lambda: len(idempotent.acked) >= acked + 300 and len(transactional.committed) >= committed + 60
                   or bool(failures), "both producers going on without broker 1")
    finally:
        stop.set()
        for t in threads:
            t.join(WAIT_S * 2)
    assert not failures, failures
    idempotent.flush()
    line = cluster.brokers[1].wait_for_log(KILLED.pattern, timeout=0)
    assert line is not None, "broker 1 died some other way"
    cluster.kill(1)
    assert cluster.brokers[1].bad_exits == ["the broker exited by itself with code -9"]
    cluster.brokers[1].bad_exits.clear()  # the exit this test caused
    assert idempotent.errors == [], idempotent.errors[:5]  # librdkafka retried at the new leaders
    assert len(idempotent.acked) == sent and transactional.committed
    exactly_once_in_order(read_all(cluster, "seam-idem", PARTITIONS, sent), idempotent.acked, PARTITIONS)
    rows = confluent_read(cluster.bootstrap(), {"seam-txn": PARTITIONS}, "read_committed",
                          len(transactional.committed))
    _read_committed_once_in_order(rows, transactional)
    orphan = KILLED.search(line).group(1)  # type: ignore[union-attr]
    wait_until(lambda: orphan not in asyncio.run(_stored(cluster)), f"the orphan {orphan} collected")
    assert any(cluster.brokers[n].wait_for_log(r"and [1-9]\d* orphans of failed commits") for n in (2, 3))
