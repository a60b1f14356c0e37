"""Transactions end to end: real confluent-kafka (librdkafka) and kafka-python clients against a
real broker process (tests/broker_process.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from confluent_kafka import KafkaError as CKafkaError
from confluent_kafka import KafkaException

from broker.dispatch import HANDLERS
from protocol.api_keys import ApiKey
from tests.broker_process import REPO
from tests.e2e.txn_clients import (
    confluent_read,
    create_topics,
    high_watermarks,
    kafka_admin,
    kafka_module,
    kafka_python_read,
    kafka_tp,
    last_stable_offsets,
    plain_producer,
    txn_producer,
    wait_until,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(ApiKey.FIND_COORDINATOR not in HANDLERS,
                       reason="transactional clients need FindCoordinator (group coordinator work)"),
]

SETTINGS = {"transaction.state.log.num.partitions": "5", "offsets.topic.num.partitions": "5"}


@pytest.fixture
def txn_broker(broker_factory):  # type: ignore[no-untyped-def]
    return broker_factory(SETTINGS)


def values(records) -> list[bytes]:  # type: ignore[no-untyped-def]
    return sorted(r[3] for r in records)


def test_committed_and_aborted_over_two_topics_with_a_plain_producer(txn_broker):
    """Two topics x 3 partitions; transactions committed and aborted in turn, interleaved with a
    non-transactional idempotent producer. read_committed sees committed + plain data, whole and
    in offset order; read_uncommitted sees everything."""
    bs = txn_broker.bootstrap
    create_topics(bs, ["orders", "payments"], 3)
    txn = txn_producer(bs, "mixed-1")
    plain = plain_producer(bs)
    expected_committed, aborted = [], []
    for n in range(6):
        txn.begin_transaction()
        batch = [f"t{n}-{i}".encode() for i in range(12)]
        for i, v in enumerate(batch):
            txn.produce("orders" if i % 2 else "payments", value=v, key=str(i).encode())
            plain.produce("orders", value=f"p{n}-{i}".encode(), key=str(i).encode())
        if n % 2:
            txn.flush(30)  # else librdkafka purges the unsent records and the log never sees them
            txn.abort_transaction(30)
            aborted += batch
        else:
            txn.commit_transaction(30)
            expected_committed += batch
    plain.flush(30)
    plain_values = [f"p{n}-{i}".encode() for n in range(6) for i in range(12)]
    topics = {"orders": 3, "payments": 3}
    total_committed = len(expected_committed) + len(plain_values)

    committed = confluent_read(bs, topics, "read_committed", total_committed)
    assert values(committed) == sorted(expected_committed + plain_values)
    for tp in {(t, p) for t, p, _, _ in committed}:
        offs = [o for t, p, o, _ in committed if (t, p) == tp]
        assert offs == sorted(offs)

    assert values(kafka_python_read(bs, topics, total_committed)) == sorted(expected_committed + plain_values)

    everything = confluent_read(bs, topics, "read_uncommitted", total_committed + len(aborted))
    assert values(everything) == sorted(expected_committed + plain_values + aborted)


def test_open_transaction_holds_back_read_committed_until_commit(txn_broker):
    bs = txn_broker.bootstrap
    create_topics(bs, ["held"], 1)
    plain = plain_producer(bs)
    plain.produce("held", value=b"before")
    plain.flush(30)
    txn = txn_producer(bs, "holder")
    txn.begin_transaction()
    txn.produce("held", value=b"in-txn")
    txn.flush(30)
    plain.produce("held", value=b"after")
    plain.flush(30)
    assert high_watermarks(bs, "held", 1) == {0: 3}
    assert last_stable_offsets(bs, "held", 1) == {0: 1}  # the open txn begins at offset 1
    assert values(confluent_read(bs, {"held": 1}, "read_committed", 1)) == [b"before"]
    txn.commit_transaction(30)
    wait_until(lambda: last_stable_offsets(bs, "held", 1) == {0: 4}, "the LSO to pass the marker")
    assert values(confluent_read(bs, {"held": 1}, "read_committed", 3)) == [b"after", b"before", b"in-txn"]


def test_zombie_is_fenced_by_a_producer_with_the_same_transactional_id(txn_broker):
    bs = txn_broker.bootstrap
    create_topics(bs, ["zombies"], 3)
    zombie = txn_producer(bs, "shared-id")
    zombie.begin_transaction()
    for i in range(5):
        zombie.produce("zombies", value=f"zombie-{i}".encode())
    zombie.flush(30)
    successor = txn_producer(bs, "shared-id")  # fences the zombie and aborts its transaction
    successor.begin_transaction()
    successor.produce("zombies", value=b"successor")
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        zombie.commit_transaction(30)
    assert info.value.args[0].fatal() or info.value.args[0].code() in (
        CKafkaError.INVALID_PRODUCER_EPOCH, CKafkaError.PRODUCER_FENCED)
    assert values(confluent_read(bs, {"zombies": 3}, "read_committed", 1)) == [b"successor"]


def test_broker_aborts_a_timed_out_transaction(broker_factory):
    b = broker_factory({**SETTINGS, "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    bs = b.bootstrap
    create_topics(bs, ["slow"], 1)
    txn = txn_producer(bs, "orders-1", **{"transaction.timeout.ms": 1500})
    txn.begin_transaction()
    txn.produce("slow", value=b"never")
    txn.flush(30)

    def aborted() -> bool:
        # Its ABORT marker lets the LSO reach the end of the log. (Normally after the record, at
        # 2; on a loaded machine the broker may abort before the record is written: the marker
        # alone, at 1, and the producer's late batch is fenced.)
        end = high_watermarks(bs, "slow", 1)[0]
        return end >= 1 and last_stable_offsets(bs, "slow", 1)[0] == end

    wait_until(aborted, "the broker to abort the transaction")
    with pytest.raises(KafkaException):
        txn.commit_transaction(30)
    assert values(confluent_read(bs, {"slow": 1}, "read_committed", 0)) == []
    assert b.logged("transaction of 'orders-1'") and b.logged("timed out after 1500 ms")


_CRASHING_PRODUCER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "crashy"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(20):
        p.produce("crash", value=b"lost-%d" % i)
    p.flush(30)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_killed_producer_is_cleaned_up_by_its_successor(txn_broker):
    bs = txn_broker.bootstrap
    create_topics(bs, ["crash"], 2)
    proc = subprocess.Popen([sys.executable, "-c", _CRASHING_PRODUCER, bs], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    finally:
        proc.kill()
        proc.communicate(timeout=10)  # reap it and close its pipe
    assert sum(last_stable_offsets(bs, "crash", 2).values()) < 20
    successor = txn_producer(bs, "crashy")  # aborts the dead producer's open transaction
    successor.begin_transaction()
    successor.produce("crash", value=b"kept")
    successor.commit_transaction(30)
    assert values(confluent_read(bs, {"crash": 2}, "read_committed", 1)) == [b"kept"]
    lso, hw = last_stable_offsets(bs, "crash", 2), high_watermarks(bs, "crash", 2)
    assert lso == hw


def test_bad_transaction_timeout_is_refused(txn_broker):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": txn_broker.bootstrap, "transactional.id": "too-long",
                  "transaction.timeout.ms": 900_001})
    with pytest.raises(KafkaException) as info:
        p.init_transactions(30)
    assert info.value.args[0].code() == CKafkaError.INVALID_TRANSACTION_TIMEOUT


def test_operator_finds_an_open_transaction_with_admin_tools(txn_broker):
    """kafka-python's admin client (as kafka-transactions.sh) lists, describes and finds it."""
    bs = txn_broker.bootstrap
    create_topics(bs, ["described"], 2)
    txn = txn_producer(bs, "visible-1")
    txn.begin_transaction()
    txn.produce("described", value=b"x", partition=1)
    txn.flush(30)
    admin = kafka_admin(bs)
    try:
        # answers per broker: {node id: [TransactionListing]}
        listed = {t.transactional_id: t for ts in admin.list_transactions().values() for t in ts}
        assert str(listed["visible-1"].state.value) == "Ongoing"
        ongoing = admin.list_transactions(state_filters=["Ongoing"])
        assert [t.transactional_id for ts in ongoing.values() for t in ts] == ["visible-1"]
        described = admin.describe_transactions(["visible-1"])["visible-1"]
        assert {(tp.topic, tp.partition) for tp in described.topic_partitions} == {("described", 1)}
        assert described.producer_id == listed["visible-1"].producer_id
        producers = admin.describe_producers([kafka_tp("described", 1)])
        [state] = producers[kafka_tp("described", 1)].active_producers
        assert state.producer_id == described.producer_id
        assert state.current_transaction_start_offset == 0
    finally:
        admin.close()
    txn.abort_transaction(30)
    assert confluent_read(bs, {"described": 2}, "read_committed", 0) == []


def test_kafka_python_transactional_producer_commits_aborts_and_is_fenced(txn_broker):
    """kafka-python 3 speaks InitProducerId v4, AddPartitionsToTxn v3, EndTxn v3, Produce v9."""
    bs = txn_broker.bootstrap
    create_topics(bs, ["kp"], 3)
    kafka = kafka_module()
    p = kafka.KafkaProducer(bootstrap_servers=bs, transactional_id="kp-1")
    p.init_transactions()
    p.begin_transaction()
    for i in range(5):
        p.send("kp", value=b"c%d" % i)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(5):
        p.send("kp", value=b"a%d" % i)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.send("kp", value=b"zombie")
    p.flush()
    successor = txn_producer(bs, "kp-1")  # confluent-kafka takes the id over
    successor.begin_transaction()
    successor.produce("kp", value=b"successor")
    successor.commit_transaction(30)
    with pytest.raises(kafka.errors.KafkaError) as info:
        p.commit_transaction()
    assert "Fenced" in type(info.value).__name__ or "Epoch" in type(info.value).__name__
    p.close(timeout=5)
    expected = [b"c0", b"c1", b"c2", b"c3", b"c4", b"successor"]
    assert values(confluent_read(bs, {"kp": 3}, "read_committed", 6)) == expected
    assert values(kafka_python_read(bs, {"kp": 3}, 6)) == expected
