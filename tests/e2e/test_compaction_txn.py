"""Transactions on a compacted topic, cleaned by the broker, read by confluent-kafka, kafka-python
and the Java consumer at both isolation levels: committed and aborted transactions interleaved with
plain idempotent writes; after cleaning, aborted records are gone, the latest committed value of
every key is where it was written, and producers that keep writing are not rejected."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from broker.embedded import create_topic
from tests.e2e.test_compaction import CLEANER, TOPIC_CONFIG, compile_reader, java_read, wait_cleaned_to
from tests.e2e.txn_clients import (
    WAIT_S,
    confluent_read,
    end_offsets,
    high_watermarks,
    kafka_python_read,
    txn_producer,
    wait_until,
)

pytestmark = pytest.mark.e2e

TOPIC = "compacted-txn"
ROUNDS = 12
KEYS = 4
Written = dict[int, tuple[bytes, bytes, str]]  # offset -> (key, value, "plain" | "committed" | "aborted")


def _recorder(written: Written, kind: str):  # type: ignore[no-untyped-def]
    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        written[msg.offset()] = (msg.key(), msg.value(), kind)
    return delivered


def write_interleaved(txn: Producer, plain: Producer, written: Written, rounds: range, aborts: bool) -> None:
    for r in rounds:
        commit = r % 3 != 1 or not aborts
        kind = "committed" if commit else "aborted"
        txn.begin_transaction()
        for k in range(KEYS):
            txn.produce(TOPIC, key=b"t%d" % k, value=b"%s-%d-%d" % (kind.encode(), r, k),
                        on_delivery=_recorder(written, kind))
        txn.flush(WAIT_S)
        for k in range(KEYS):
            plain.produce(TOPIC, key=b"p%d" % k, value=b"plain-%d-%d" % (r, k), on_delivery=_recorder(written, "plain"))
        plain.flush(WAIT_S)
        if commit:
            txn.commit_transaction(WAIT_S)
        else:
            txn.abort_transaction(WAIT_S)


def check(written: Written, rows: list[tuple[int, bytes, bytes | None]], level: str) -> None:
    offsets = [o for o, _, _ in rows]
    assert offsets == sorted(set(offsets))
    for offset, key, value in rows:
        assert written[offset][:2] == (key, value), f"offset {offset} is not what was written there"
        assert written[offset][2] != "aborted", f"{level}: aborted record at {offset} survived cleaning"
    latest: dict[bytes, int] = {}
    for offset in sorted(written):
        key, _, kind = written[offset]
        if kind != "aborted":
            latest[key] = offset
    assert set(latest.values()) <= set(offsets), f"{level}: a key's latest committed value is missing"
    assert len(rows) < sum(kind != "aborted" for _, _, kind in written.values()), "nothing was compacted"


@pytest.fixture(scope="module")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_reader(tmp_path_factory)


def test_transactions_on_a_compacted_topic(broker_factory, java_classes) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory(CLEANER)
    create_topic(broker.bootstrap, TOPIC, 1, TOPIC_CONFIG)
    txn = txn_producer(broker.bootstrap, "compacting-txn", **{"batch.num.messages": 2, "linger.ms": 0})
    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 0,
                      "batch.num.messages": 2})
    written: Written = {}
    write_interleaved(txn, plain, written, range(ROUNDS), aborts=True)
    for i in range(120):  # pushes every transaction into closed segments
        plain.produce(TOPIC, key=b"filler-%d" % i, value=b"f" * 40, on_delivery=_recorder(written, "plain"))
    assert plain.flush(WAIT_S) == 0
    last_txn = max(o for o, (key, _, _) in written.items() if key.startswith(b"t"))
    wait_cleaned_to(broker, f"{TOPIC}-0", last_txn + 1)  # past its marker too

    # The same producers go on after their batches were cleaned: neither is refused.
    write_interleaved(txn, plain, written, range(ROUNDS, ROUNDS + 3), aborts=False)
    end = high_watermarks(broker.bootstrap, TOPIC, 1)[0]
    # commit_transaction returns once the commit is decided; the markers follow (as in Kafka), and a
    # read_committed reader stops at the last stable offset, so wait for it to reach the end.
    wait_until(lambda: end_offsets(broker.bootstrap, TOPIC, 1, "read_committed")[0] == end, "the LSO to reach the end")
    for level in ("read_committed", "read_uncommitted"):
        rows = [(o, written[o][0], v) for _, _, o, v in confluent_read(broker.bootstrap, {TOPIC: 1}, level, 1)]
        check(written, rows, f"confluent-kafka {level}")
        check(written, java_read(java_classes, broker.bootstrap, TOPIC, end, level), f"java {level}")
    python_rows = [(o, written[o][0], v) for _, _, o, v in kafka_python_read(broker.bootstrap, {TOPIC: 1}, 1)]
    check(written, python_rows, "kafka-python read_committed")
