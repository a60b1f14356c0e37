"""Pipelined Produce requests over the object store (broker/connection/answers.py): a connection's
next Produce is sequenced while the one before waits for its flush to be stored and committed, so a
producer's requests in flight share flushes instead of waiting out one each; answers still come
in request order, and nothing is acknowledged that is not committed. In memory:
tests/broker/connection/test_pipelining.py."""

from __future__ import annotations

import asyncio
import datetime
import threading
import time

import asyncpg
import pytest
from confluent_kafka import Producer
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v8.response import ProduceResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.e2e.cluster.conftest import WAIT_S, wait_until
from tests.e2e.cluster.test_failover import Sender, batch, create_topic, exactly_once_in_order, read_all
from tests.e2e.objects.conftest import ObjectCluster
from tests.e2e.test_pipelining import send_all
from tests.e2e.txn_clients import confluent_read
from tests.kafka_wire import RawClient, decode_response, recv_frame
from tests.s3_server import S3Server

pytestmark = pytest.mark.e2e

PRODUCER_ID = 727272
RETRIABLE = (ErrorCode.none, ErrorCode.kafka_storage_error, ErrorCode.out_of_order_sequence_number)


def produce(topic: str, partition: int, records: bytes) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=WAIT_S),
                          topic_data=(TopicProduceData(name=topic, partition_data=(
                              PartitionProduceData(index=partition, records=records),)),))


def pipelined(bootstrap: str, requests: list[ProduceRequest]) -> list[tuple[int, int, int]]:
    """Send every request at once on one connection; (correlation id, error, base offset) of each
    answer, in the order they came."""
    answers = []
    with RawClient(bootstrap, timeout=WAIT_S * 2) as client:
        send_all(client.sock, requests)
        for _ in requests:
            header, body = decode_response(recv_frame(client.sock), ApiKey.PRODUCE, 8)
            assert isinstance(body, ProduceResponse)
            [part] = body.responses[0].partition_responses
            answers.append((header.correlation_id, part.error_code, part.base_offset))
    return answers


async def _objects_of(url: str, topic: str) -> dict[int, set[str]]:
    """partition -> the objects its runs are in."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT r.partition, r.object_key FROM batch_runs r JOIN topics t USING (topic_id) "
                                "WHERE t.name = $1", topic)
    finally:
        await conn.close()
    found: dict[int, set[str]] = {}
    for r in rows:
        found.setdefault(r["partition"], set()).add(r["object_key"])
    return found


def test_requests_pipelined_on_one_connection_share_one_flush_and_are_answered_in_order(
        cluster: ObjectCluster) -> None:
    # A long flush window, which runs from the last flush of client records (the warm-up's): one
    # connection's three requests arrive well within it, and land in one object only if each is
    # sequenced while the one before waits for the flush.
    cluster.start(1, settings={"cluster.object.flush.ms": "3000"})
    create_topic(cluster, "shared", 3)
    create_topic(cluster, "warm-up", 1)
    cluster.settled("shared")
    cluster.settled("warm-up")
    assert pipelined(cluster.bootstrap(), [produce("warm-up", 0, batch(b"w", producer_id=PRODUCER_ID - 1,
                                                                       base_sequence=0))]) == [(1, 0, 0)]
    requests = [produce("shared", p, batch(b"%d" % p, producer_id=PRODUCER_ID + p, base_sequence=0))
                for p in range(3)]
    assert pipelined(cluster.bootstrap(), requests) == [(1, 0, 0), (2, 0, 0), (3, 0, 0)]
    objects = asyncio.run(_objects_of(cluster.url, "shared"))
    assert sorted(objects) == [0, 1, 2] and len(set.union(*objects.values())) == 1


def test_an_idempotent_producer_with_five_in_flight_has_every_record_once_in_order(cluster: ObjectCluster) -> None:
    cluster.start(1)
    create_topic(cluster, "many", 6)
    cluster.settled("many")
    # Small batches: many requests, five in flight at a time on the connection.
    sender = Sender(cluster.bootstrap(), **{"max.in.flight.requests.per.connection": 5, "batch.size": 4096,
                                            "acks": "all"})
    sender.send("many", range(20_000), 6)
    sender.flush()
    assert sender.errors == [] and len(sender.acked) == 20_000
    exactly_once_in_order(read_all(cluster, "many", 6, 20_000), sender.acked, 6)


def test_a_transactional_producer_pipelining_is_read_exactly_at_read_committed(cluster: ObjectCluster) -> None:
    cluster.start(1)
    create_topic(cluster, "txns", 4)
    cluster.settled("txns")
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": "pipelined",
                         "batch.size": 2048, "linger.ms": 2, "max.in.flight.requests.per.connection": 5})
    producer.init_transactions(WAIT_S)
    committed: list[bytes] = []
    for txn in range(12):
        producer.begin_transaction()
        values = [b"%d-%d" % (txn, i) for i in range(400)]
        for i, value in enumerate(values):
            producer.produce("txns", value=value, key=b"%d" % (i % 4))
        if txn % 3 == 2:
            producer.abort_transaction(WAIT_S)
        else:
            producer.commit_transaction(WAIT_S)
            committed += values
    rows = confluent_read(cluster.bootstrap(), {"txns": 4}, "read_committed", len(committed))
    assert sorted(v for *_, v in rows) == sorted(committed)  # each once, nothing of an aborted one


def _stored_nothing(answers: list[tuple[int, int, int]]) -> bool:
    """Each answer is a retriable refusal: the flush failed, or (behind it) the sequence it follows
    was not written, as Kafka answers a batch after a lost one."""
    return all(code in (ErrorCode.kafka_storage_error, ErrorCode.out_of_order_sequence_number)
               for _, code, _ in answers) and answers[0][1] == ErrorCode.kafka_storage_error


def test_a_failed_flush_mid_pipeline_acknowledges_nothing_behind_it(
        cluster: ObjectCluster, s3_server: S3Server) -> None:
    """Three requests of one producer to one partition in flight while the store is down: the
    first's flush fails, and none behind it is acknowledged (each failed with it, or is out of
    order behind it); sent again once the store is back, each is written once, in order."""
    cluster.start(1)
    create_topic(cluster, "refused", 1)
    cluster.settled("refused")
    requests = [produce("refused", 0, batch(b"%d" % i, producer_id=PRODUCER_ID, base_sequence=i)) for i in range(3)]
    s3_server.stop()
    try:
        answers = pipelined(cluster.bootstrap(), requests)
    finally:
        s3_server.start()
    assert [cid for cid, _, _ in answers] == [1, 2, 3]
    assert _stored_nothing(answers), answers
    assert cluster.brokers[1].logged("flushes to the object store fail")
    again = _until_written(cluster.bootstrap(), requests)
    assert again == [(1, 0, 0), (2, 0, 1), (3, 0, 2)]
    assert [v for *_, v in read_all(cluster, "refused", 1, 3)] == [b"0", b"1", b"2"]


def _until_written(bootstrap: str, requests: list[ProduceRequest]) -> list[tuple[int, int, int]]:
    """Send the requests again (as the producer retries) until the store, back, takes them all; a
    request written by an earlier round is answered as a duplicate, at its offset."""
    for _ in range(int(WAIT_S * 4)):
        answers = pipelined(bootstrap, requests)
        if all(code == ErrorCode.none for _, code, _ in answers):
            return answers
        assert all(code in RETRIABLE for _, code, _ in answers), answers
        time.sleep(0.25)
    raise AssertionError("the store never took the appends again")


def test_one_partition_with_flushes_in_flight_through_a_store_outage_has_every_record_once(
        cluster: ObjectCluster, s3_server: S3Server) -> None:
    """An idempotent producer with five requests in flight to ONE partition, whose flushes are in
    flight together (the leader sequences the next while the one before commits): the store goes
    away mid-stream, so flushes fail with others of the partition behind them, and comes back.
    Every acknowledged record is there once, in order, at offsets neither reused nor skipped."""
    cluster.start(1)
    create_topic(cluster, "one", 1)
    cluster.settled("one")
    sender = Sender(cluster.bootstrap(), **{"max.in.flight.requests.per.connection": 5, "batch.size": 2048,
                                            "linger.ms": 2, "acks": "all"})
    stop = threading.Event()
    sent = 0

    def produce() -> None:  # without pause, from before the outage until well after it
        nonlocal sent
        while not stop.is_set():
            sender.send("one", range(sent, sent + 50), 1)
            sent += 50
            sender.producer.poll(0.01)

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        wait_until(lambda: len(sender.acked) >= 500, "the first acknowledgements")
        s3_server.stop()
        try:
            wait_until(lambda: cluster.brokers[1].logged("flushes to the object store fail"), "a failed flush")
        finally:
            s3_server.start()
        before = len(sender.acked)
        wait_until(lambda: len(sender.acked) >= before + 1000, "acknowledgements once the store is back")
    finally:
        stop.set()
        thread.join(WAIT_S)
    sender.flush()
    assert sender.errors == [] and len(sender.acked) == sent
    exactly_once_in_order(read_all(cluster, "one", 1, sent), sender.acked, 1)
