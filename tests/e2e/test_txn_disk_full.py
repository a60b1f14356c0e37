"""Issue 9: a transaction committing while the disk is full, for real (tmpfs, as test_disk_full).

The COMMIT marker cannot be written while the data dir is full: the coordinator keeps retrying it
(a warning names the transaction, producer and partition), the partition's LSO stays at the
transaction's first offset, and the producer's next transactional call is answered with the
retriable CONCURRENT_TRANSACTIONS. Once space is freed the marker is written, the LSO reaches the
high watermark, the next transaction commits too, and read_committed reads exactly the committed
records, also after kill -9 and a restart.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from tests.broker_process import BrokerProcess
from tests.conftest import BrokerFactory
from tests.e2e.test_disk_full import fill, tmpfs_data_dir  # noqa: F401 - tmpfs_data_dir is a fixture
from tests.e2e.txn_clients import confluent_read, high_watermarks, last_stable_offsets, txn_producer, wait_until

pytestmark = pytest.mark.e2e

TOPIC = "full-txn"
SETTINGS = {"num.partitions": "1", "transaction.state.log.num.partitions": "1",
            "offsets.topic.num.partitions": "1"}


def fill_last_page(bootstrap: str) -> list[bytes]:
    """With the file system full, a log file's last page may still take small batches: append
    tiny plain records until the partition answers KAFKA_STORAGE_ERROR. Returns those acked."""
    acked: list[bytes] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0, "enable.idempotence": False,
                  "linger.ms": 0, "message.timeout.ms": 20000})
    errors: list[KafkaError | None] = []
    for i in range(200):  # a 4 KiB page holds about 60 of them
        value = b"p%03d" % i
        p.produce(TOPIC, value, partition=0, on_delivery=lambda err, _m: errors.append(err))
        p.flush(30)
        if errors[-1] is not None:
            assert errors[-1].code() == KafkaError.KAFKA_STORAGE_ERROR, errors[-1]
            return acked
        acked.append(value)
    raise AssertionError("the partition never ran out of space")


def in_thread(fn) -> tuple[threading.Thread, list[BaseException]]:  # type: ignore[no-untyped-def]
    failures: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, failures


def test_issue_9_commit_marker_waits_for_space_and_nothing_is_lost(
    tmpfs_data_dir: Path, broker_factory: BrokerFactory  # noqa: F811
) -> None:
    broker: BrokerProcess = broker_factory(SETTINGS, name="data")
    broker.expect_log(r"KAFKA_STORAGE_ERROR|No space left|ENOSPC|running it again")
    first = [b"a-%03d" % i for i in range(50)]
    second = [b"b-%03d" % i for i in range(50)]
    third = [b"c-%03d" % i for i in range(50)]
    producer = txn_producer(broker.bootstrap, "disk-full-txn")
    producer.begin_transaction()
    for v in first:
        producer.produce(TOPIC, v, partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for v in second:
        producer.produce(TOPIC, v, partition=0)
    producer.flush(30)  # the records are acked; the transaction is still open
    txn_start = last_stable_offsets(broker.bootstrap, TOPIC, 1)[0]

    filler = fill(tmpfs_data_dir, 0)
    plain = fill_last_page(broker.bootstrap)
    commit, commit_failed = in_thread(lambda: producer.commit_transaction(120))
    wait_until(lambda: broker.logged("marker of 'disk-full-txn'"), "the COMMIT marker to fail")
    assert last_stable_offsets(broker.bootstrap, TOPIC, 1)[0] == txn_start  # pinned, not forgotten

    filler.unlink()
    commit.join(150)
    assert not commit.is_alive() and not commit_failed, commit_failed
    wait_until(lambda: last_stable_offsets(broker.bootstrap, TOPIC, 1) == high_watermarks(broker.bootstrap, TOPIC, 1),
               "the LSO to reach the high watermark")
    producer.begin_transaction()  # the next transaction goes through once the marker is in
    for v in third:
        producer.produce(TOPIC, v, partition=0)
    producer.commit_transaction(60)

    expected = Counter(first + plain + second + third)
    rows = confluent_read(broker.bootstrap, {TOPIC: 1}, "read_committed", sum(expected.values()))
    assert Counter(r[3] for r in rows) == expected
    broker.restart(kill=True)
    rows = confluent_read(broker.bootstrap, {TOPIC: 1}, "read_committed", sum(expected.values()))
    assert Counter(r[3] for r in rows) == expected
