"""The history workload's clients (confluent-kafka), each in its own thread, recording every send
and every outcome in a History: transactional producers that commit or abort transactions over
several partitions, idempotent producers, and whole-partition readers."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.history.checker import History, Isolation, Outcome, Read, TopicPartition, Write

WAIT_S = 30.0
# Clients come back quickly after the broker does; the defaults back off for up to 10 s.
RECONNECT = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500}


class TransactionalWriter:
    """One transactional.id; a new producer instance (a new `producer` name in the history) after
    any error that leaves the transaction's fate unknown. init_transactions on the new instance
    fences the old one and finishes its transaction, so nothing stays open at the end."""

    def __init__(self, name: str, bootstrap: str, tps: Sequence[TopicPartition], history: History,
                 rng: random.Random, commit_ratio: float) -> None:
        self.name, self.bootstrap, self.tps, self.history = name, bootstrap, tps, history
        self.rng, self.commit_ratio = rng, commit_ratio
        self.incarnation = 0
        self.committed = 0

    def run(self, stop: threading.Event) -> None:
        producer = self._new_producer()
        n = 0
        while not stop.is_set():
            if not self._transaction(producer, f"{self.name}.{n}"):
                producer = self._new_producer()
            n += 1

    def _new_producer(self) -> Producer:
        self.incarnation += 1
        deadline = time.monotonic() + 3 * WAIT_S
        while True:
            producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.name,
                                 "transaction.timeout.ms": 10_000, "linger.ms": 2, **RECONNECT})
            try:
                producer.init_transactions(WAIT_S)
                return producer
            except KafkaException:
                if time.monotonic() > deadline:
                    raise  # the broker never came back for this client: the workload fails

    def _transaction(self, producer: Producer, txn: str) -> bool:
        """Run one transaction; False when the producer must be replaced."""
        commit = self.rng.random() < self.commit_ratio
        committing = False
        try:
            producer.begin_transaction()
            for tp in self.rng.sample(list(self.tps), k=self.rng.randint(1, 3)):
                for i in range(self.rng.randint(1, 3)):
                    value = f"{txn}.{tp[0]}-{tp[1]}.{i}".encode()
                    self.history.send(Write(value=value, tp=tp, producer=f"{self.name}#{self.incarnation}", txn=txn))
                    producer.produce(tp[0], value, partition=tp[1])
            if not commit:
                producer.abort_transaction(WAIT_S)
                self.history.settle_txn(txn, Outcome.FAILED)
                return True
            committing = True
            self._commit(producer)
            self.history.settle_txn(txn, Outcome.ACKNOWLEDGED)
            self.committed += 1
            return True
        except KafkaException as exc:
            return self._after_error(producer, txn, committing, exc.args[0])

    def _commit(self, producer: Producer) -> None:
        for attempt in range(3):
            try:
                producer.commit_transaction(WAIT_S)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or attempt == 2:
                    raise

    def _after_error(self, producer: Producer, txn: str, committing: bool, error: KafkaError) -> bool:
        # A transaction whose commit was never asked for can only abort, whatever happens next.
        if not committing:
            self.history.settle_txn(txn, Outcome.FAILED)
        if error.txn_requires_abort():
            try:
                producer.abort_transaction(WAIT_S)
                self.history.settle_txn(txn, Outcome.FAILED)
                return True
            except KafkaException:
                pass
        if committing:
            self.history.settle_txn(txn, Outcome.UNKNOWN)
        return False


class IdempotentWriter:
    """An idempotent producer sending to every partition in turn, a few records per flush; a new
    instance after a fatal error. A send is acknowledged by its delivery report; any error leaves
    it unknown (a timed-out send may have been written)."""

    def __init__(self, name: str, bootstrap: str, tps: Sequence[TopicPartition], history: History) -> None:
        self.name, self.bootstrap, self.tps, self.history = name, bootstrap, tps, history
        self.incarnation = 0
        self.acknowledged = 0
        self.fatal = False

    def run(self, stop: threading.Event) -> None:
        producer = self._new_producer()
        n = 0
        while not stop.is_set():
            if self.fatal:
                producer.purge()
                producer = self._new_producer()
            for _ in range(10):
                tp = self.tps[n % len(self.tps)]
                value = f"{self.name}.{n}".encode()
                self.history.send(Write(value=value, tp=tp, producer=f"{self.name}#{self.incarnation}"))
                producer.produce(tp[0], value, partition=tp[1], on_delivery=self._delivered)
                n += 1
            producer.flush(WAIT_S)
            stop.wait(0.01)  # pacing, so that long chaos runs do not make every read huge
        producer.flush(3 * WAIT_S)  # what is still unsettled after this stays unknown

    def _new_producer(self) -> Producer:
        self.incarnation += 1
        self.fatal = False
        return Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 2, "message.timeout.ms": 5000, "error_cb": self._error, **RECONNECT})

    def _error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = True

    def _delivered(self, error: KafkaError | None, msg: Any) -> None:
        if error is None:
            self.history.settle_send(msg.value(), Outcome.ACKNOWLEDGED)
            self.acknowledged += 1
        else:
            self.history.settle_send(msg.value(), Outcome.UNKNOWN)
            if error.fatal():
                self.fatal = True


def wait_stable(bootstrap: str, tps: Sequence[TopicPartition], timeout: float = 3 * WAIT_S) -> None:
    """Wait until every partition's last stable offset reaches its high watermark: no transaction
    is open, so a read_committed read to the end is complete."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **RECONNECT})
    parts = [CTopicPartition(t, p) for t, p in tps]
    deadline = time.monotonic() + timeout
    while True:
        ends = [admin.list_offsets({tp: OffsetSpec.latest() for tp in parts}, isolation_level=level)
                for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED)]
        lso, hw = ({(tp.topic, tp.partition): f.result(WAIT_S).offset for tp, f in e.items()} for e in ends)
        if lso == hw:
            return
        assert time.monotonic() < deadline, f"transactions still open: LSO {lso} HW {hw}"
        time.sleep(0.2)


def read_all(bootstrap: str, tps: Sequence[TopicPartition], isolation: Isolation, label: str,
             final: bool = False) -> Read:
    """Every record of `tps` from offset 0 until each partition's end (the first time it is reached:
    writers may still be running)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"history-{time.monotonic_ns()}",
                  "isolation.level": isolation.value, "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest", **RECONNECT})
    c.assign([CTopicPartition(t, p, 0) for t, p in tps])
    records: dict[TopicPartition, list[tuple[int, bytes]]] = {tp: [] for tp in tps}
    at_end: set[TopicPartition] = set()
    deadline = time.monotonic() + 3 * WAIT_S
    try:
        while len(at_end) < len(tps):
            assert time.monotonic() < deadline, f"{label}: no end of {set(tps) - at_end}"
            for m in c.consume(1000, 0.2):
                tp = (m.topic(), m.partition())
                if m.error() and m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(tp)
                elif m.error():
                    raise KafkaException(m.error())
                else:
                    records[tp].append((m.offset(), m.value()))
    finally:
        c.close()
    return Read(label=label, isolation=isolation, final=final, records=records)
