"""Issue 11: abort a hanging transaction with Kafka's own kafka-transactions, and an LSO that explains
itself.

A hanging transaction as Kafka defines it: a transaction open in a partition whose producer the
transaction coordinator does not know, so no marker and no timeout will ever close it. It is made
here as a client with a lost coordinator state leaves it: a transactional batch (raw wire) from a
producer id the coordinator never issued. It pins the partition's LSO, so read_committed consumers
stop; find-hanging finds it (and not a healthy open transaction the coordinator tracks); both abort
forms write an ABORT marker through WriteTxnMarkers, and a read_committed consumer reads past it.
With a short transaction.lso.warning.threshold.ms the broker logs the warning and its clearing.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.e2e.test_metrics import Scraper
from tests.e2e.txn_clients import (
    confluent_read,
    create_topics,
    high_watermarks,
    last_stable_offsets,
    plain_producer,
    txn_producer,
    wait_until,
)
from tests.kafka_tools import run_tool
from tests.kafka_wire import RawClient

pytestmark = pytest.mark.e2e
TOPIC = "hang"
GHOST, OTHER_GHOST = 900_000_001, 900_000_002


def produce_ghost_txn(bootstrap: str, producer_id: int, epoch: int, count: int) -> None:
    """A transactional batch from a producer id (and transactional id) the coordinator never issued."""
    ts = int(time.time() * 1000) - 1000  # find-hanging wants it older than now
    records = bytes(build_batch([Record(key=None, value=b"ghost", timestamp=ts)] * count, producer_id=producer_id,
                                producer_epoch=epoch, base_sequence=0, transactional=True))
    with RawClient(bootstrap) as client:
        body = client.request(build(request_schema(ApiKey.PRODUCE, 9), {
            "transactional_id": "lost-coordinator-state", "acks": -1, "timeout": 10_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}]}))
    assert body.responses[0].partition_responses[0].error_code is ErrorCode.none


def transactions_tool(broker, *args: str):  # type: ignore[no-untyped-def]
    return run_tool("kafka-transactions", "--bootstrap-server", broker.bootstrap, *args)


def hanging_rows(out: str) -> set[tuple[str, str, str, str]]:
    """(topic, partition, producer id, start offset) of each row find-hanging printed."""
    lines = out.strip().splitlines()
    assert lines and lines[0].split()[:3] == ["Topic", "Partition", "ProducerId"], out
    return {(c[0], c[1], c[2], c[5]) for c in (line.split() for line in lines[1:])}


def logged_line(broker, text: str) -> str:  # type: ignore[no-untyped-def]
    wait_until(lambda: broker.logged(text), f"a broker log line with {text!r}")
    return next(line for line in broker.log_lines if text in line)


def test_issue_11_find_and_abort_a_hanging_transaction(broker_factory) -> None:  # type: ignore[no-untyped-def]
    broker = broker_factory({"transaction.lso.warning.threshold.ms": "1000", "metrics.port": "0"})
    scraper = Scraper(broker)
    create_topics(broker.bootstrap, [TOPIC], 2)
    produce_ghost_txn(broker.bootstrap, GHOST, 0, 2)
    plain = plain_producer(broker.bootstrap)
    for i in range(3):
        plain.produce(TOPIC, value=b"after-%d" % i, partition=0)
    plain.flush(30)
    healthy = txn_producer(broker.bootstrap, "healthy-tx", **{"transaction.timeout.ms": 600_000})
    healthy.begin_transaction()
    healthy.produce(TOPIC, value=b"open", partition=1)
    healthy.flush(30)

    # The LSO is pinned: read_committed consumers reach the end of partition 0 at offset 0.
    assert last_stable_offsets(broker.bootstrap, TOPIC, 2) == {0: 0, 1: 0}
    assert high_watermarks(broker.bootstrap, TOPIC, 2) == {0: 5, 1: 1}
    assert confluent_read(broker.bootstrap, {TOPIC: 1}, "read_committed", expected=0) == []

    # The broker explains both: the hanging one and the one its coordinator will time out.
    command = f"kafka-transactions --bootstrap-server {broker.bootstrap} abort --topic {TOPIC} --partition 0 " \
              "--start-offset 0"
    warning = logged_line(broker, command)
    assert " WARNING " in warning and "last stable offset of hang-0 held back" in warning, warning
    assert "LSO 0 is 5 offsets behind the high watermark 5; transactional id unknown to the coordinator, " \
           f"producer id {GHOST} epoch 0; started at offset 0 at " in warning, warning
    assert "no timeout will end it" in warning, warning
    other = logged_line(broker, "last stable offset of hang-1 held back")
    assert "transactional id 'healthy-tx' (Ongoing)" in other, other
    assert "the coordinator times it out at " in other and "(transaction.timeout.ms 600000)" in other, other

    # Metrics show it too: the age of the hanging transaction the coordinator does not know.
    assert scraper.value("eosbroker_partition_oldest_open_transaction_age_seconds", topic=TOPIC, partition="0") > 0
    assert scraper.value("eosbroker_partition_last_stable_offset_lag", topic=TOPIC, partition="0") == 5

    # find-hanging reports the hanging transaction only, by broker and by topic.
    for scope in (["--broker-id", "1"], ["--topic", TOPIC]):
        out = transactions_tool(broker, "find-hanging", *scope, "--max-transaction-timeout", "0")
        assert out.returncode == 0, out.stderr
        assert hanging_rows(out.stdout) == {(TOPIC, "0", str(GHOST), "0")}, out.stdout

    out = transactions_tool(broker, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "0")
    assert out.returncode == 0, out.stdout + out.stderr
    assert last_stable_offsets(broker.bootstrap, TOPIC, 1) == high_watermarks(broker.bootstrap, TOPIC, 1) == {0: 6}
    rows = confluent_read(broker.bootstrap, {TOPIC: 1}, "read_committed", expected=3)
    assert [value for *_, value in rows] == [b"after-0", b"after-1", b"after-2"]
    cleared = logged_line(broker, "last stable offset of hang-0 moves again")
    assert f"producer id {GHOST} epoch 0 that began at offset 0 is no longer open" in cleared, cleared

    # No open transaction at that offset any more: the tool's own check refuses.
    out = transactions_tool(broker, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "0")
    assert out.returncode == 1
    assert "Could not find any open transactions starting at offset 0 on partition hang-0" in out.stderr, out.stderr

    # The --producer-id form: a stale epoch is refused by the partition, the right one aborts.
    produce_ghost_txn(broker.bootstrap, OTHER_GHOST, 5, 1)
    assert last_stable_offsets(broker.bootstrap, TOPIC, 1) == {0: 6}
    by_id = ["abort", "--topic", TOPIC, "--partition", "0", "--producer-id", str(OTHER_GHOST)]
    out = transactions_tool(broker, *by_id, "--producer-epoch", "4", "--coordinator-epoch", "0")
    assert out.returncode == 1
    assert f"Failed to abort transaction AbortTransactionSpec(topicPartition=hang-0, producerId={OTHER_GHOST}, " \
           "producerEpoch=4, coordinatorEpoch=0)" in out.stderr, out.stderr
    assert "failed due an invalid producer epoch" in out.stderr, out.stderr
    out = transactions_tool(broker, *by_id, "--producer-epoch", "5", "--coordinator-epoch", "-1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert last_stable_offsets(broker.bootstrap, TOPIC, 1) == high_watermarks(broker.bootstrap, TOPIC, 1) == {0: 8}

    assert scraper.value("eosbroker_transactions_aborted_total", cause="admin") == 2  # the two that ended one

    healthy.commit_transaction(30)
    logged_line(broker, "last stable offset of hang-1 moves again")
    assert last_stable_offsets(broker.bootstrap, TOPIC, 2) == {0: 8, 1: 2}


def test_issue_36_force_terminate_a_transaction_left_open(broker_factory) -> None:  # type: ignore[no-untyped-def]
    """kafka-transactions forceTerminateTransaction (KIP-939's tool command, Kafka 4.1+) on a
    transaction its producer left open: the coordinator fences the producer and aborts it, so the
    partition's LSO moves past it and read_committed readers see its records aborted; the tool and
    `describe` print what they print against Kafka 4.4 (the same steps there: exit 0, Empty)."""
    broker = broker_factory()
    create_topics(broker.bootstrap, ["left-open"], 1)
    producer = txn_producer(broker.bootstrap, "left-open-app")
    producer.begin_transaction()
    for i in range(3):
        producer.produce("left-open", value=f"never-committed-{i}".encode())
    assert producer.flush(30) == 0
    assert last_stable_offsets(broker.bootstrap, "left-open", 1) == {0: 0}

    done = transactions_tool(broker, "forceTerminateTransaction", "--transactionalId", "left-open-app")
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    described = transactions_tool(broker, "describe", "--transactional-id", "left-open-app").stdout.splitlines()
    assert described[1].split()[4] == "Empty", described
    wait_until(lambda: last_stable_offsets(broker.bootstrap, "left-open", 1) == {0: 4}, "the abort marker")
    plain = plain_producer(broker.bootstrap)
    plain.produce("left-open", value=b"after")
    assert plain.flush(30) == 0
    rows = confluent_read(broker.bootstrap, {"left-open": 1}, "read_committed", expected=1)
    assert [value for *_, value in rows] == [b"after"]
    assert len(confluent_read(broker.bootstrap, {"left-open": 1}, "read_uncommitted", expected=4)) == 4
    # the fenced producer's commit fails as Kafka fails it
    with pytest.raises(KafkaException) as fenced:
        producer.commit_transaction(30)
    assert fenced.value.args[0].fatal(), fenced.value.args[0]
