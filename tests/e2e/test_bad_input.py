"""Bad input over raw sockets and through real clients. Each case gets the error Kafka gives, or
that one connection is closed with a log line; afterwards the broker still serves a fresh client
and every acknowledged record is still there."""

from __future__ import annotations

import dataclasses
import datetime
import os
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v8.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData

from broker.dispatch import HANDLERS
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import request_schema
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.e2e.txn_clients import kafka_module
from tests.kafka_wire import RawClient, closed_by_peer, decode_response, encode_request, frame, recv_frame

pytestmark = pytest.mark.e2e

SETTINGS = {"auto.create.topics.enable": "false", "socket.request.max.bytes": "200000",
            "message.max.bytes": "20000"}
WAIT_S = 30.0
WITNESS = "witness"
MULTI = "multi"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("bad-input") / "data", SETTINGS).start()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    for f in admin.create_topics([NewTopic(WITNESS, 1, 1), NewTopic("target", 1, 1), NewTopic(MULTI, 2, 1),
                                  NewTopic("clients", 1, 1)]).values():
        f.result(WAIT_S)
    p = Producer({"bootstrap.servers": proc.bootstrap})
    for i in range(100):
        p.produce(WITNESS, b"w%d" % i, partition=0)
    assert p.flush(WAIT_S) == 0
    yield proc
    proc.close()


@pytest.fixture(autouse=True)
def still_healthy(broker: BrokerProcess) -> Iterator[None]:
    yield
    assert broker.proc is not None and broker.proc.poll() is None, "the broker died"
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused"})
    c.assign([CTopicPartition(WITNESS, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < 100 and time.monotonic() < deadline:
        got += [m.value() for m in c.consume(100, 0.2) if not m.error()]
    c.close()
    assert got == [b"w%d" % i for i in range(100)]


def raw(broker: BrokerProcess) -> socket.socket:
    host, port = broker.bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=WAIT_S)


def wait_logged(broker: BrokerProcess, text: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not broker.logged(text):
        assert time.monotonic() < deadline, f"no log line with {text!r}"
        time.sleep(0.05)


def produce(client: RawClient, records: bytes, topic: str = "target", acks: int = -1):  # type: ignore[no-untyped-def]
    request = ProduceRequest(
        transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=10),
        topic_data=(TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=0, records=records),)),),
    )
    [topic_response] = client.request(request).responses
    [part] = topic_response.partition_responses
    return part


def good_batch(n: int = 1, size: int = 10) -> bytes:
    return bytes(build_batch([Record(key=b"k", value=b"x" * size, timestamp=1000 + i) for i in range(n)]))


# -- frames ------------------------------------------------------------------------------------


def test_truncated_frame_then_disconnect(broker):
    with raw(broker) as s:
        s.sendall(struct.pack(">i", 100) + b"\x00\x03\x00\x08" + b"\x00" * 10)


def test_a_stalled_half_frame_does_not_block_other_clients(broker):
    with raw(broker) as stalled:
        stalled.sendall(struct.pack(">i", 1000) + b"\x00" * 20)
        with RawClient(broker.bootstrap) as other:
            assert other.request(ApiVersionsRequest(client_software_name="t", client_software_version="1")).error_code \
                is ErrorCode.none


def test_frame_over_socket_request_max_bytes_closes_the_connection(broker):
    with raw(broker) as s:
        s.sendall(struct.pack(">i", 200_001) + b"\x00" * 100)
        assert closed_by_peer(s)
    wait_logged(broker, "exceeds socket.request.max.bytes=200000")


def test_negative_frame_size_closes_the_connection(broker):
    with raw(broker) as s:
        s.sendall(struct.pack(">i", -5))
        assert closed_by_peer(s)


def test_garbage_body_after_a_valid_header_closes_the_connection(broker):
    with raw(broker) as s:
        s.sendall(frame(struct.pack(">hhih", 3, 8, 1, 1) + b"c" + os.urandom(7) + b"\xff\xff\xff\x7f"))
        assert closed_by_peer(s)
    wait_logged(broker, "cannot parse request")


def test_random_garbage_frames(broker):
    for seed in range(5):
        with raw(broker) as s:
            s.sendall(frame(os.urandom(40 + seed)))
            s.settimeout(WAIT_S)
            try:
                s.recv(1 << 16)  # a response or a close, never a hang
            except ConnectionResetError:
                pass


# -- versions ----------------------------------------------------------------------------------


def test_unknown_api_key_closes_the_connection(broker):
    with raw(broker) as s:
        s.sendall(frame(struct.pack(">hhih", 999, 0, 7, -1)))
        assert closed_by_peer(s)
    wait_logged(broker, "api key 999")


def test_too_new_api_versions_gets_a_v0_answer_with_our_range(broker):
    with raw(broker) as s:
        s.sendall(frame(struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 12, 4) + b"test" + b"\x00" * 8))
        header, body = decode_response(recv_frame(s), ApiKey.API_VERSIONS, 0)
    assert header.correlation_id == 12
    assert isinstance(body, ApiVersionsResponseV0)
    assert body.error_code is ErrorCode.unsupported_version
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert ranges[ApiKey.API_VERSIONS] == (0, 5)


def test_api_versions_advertises_the_dispatch_table(broker):
    with RawClient(broker.bootstrap) as client:
        body = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == {
        int(h.api_key): (h.min_version, h.max_version) for h in HANDLERS.values()}


@pytest.mark.parametrize("key,version", [(ApiKey.METADATA, 99), (ApiKey.PRODUCE, 1), (ApiKey.FETCH, 3)])
def test_unsupported_version_of_another_api_closes_the_connection(broker, key, version):
    with raw(broker) as s:
        s.sendall(frame(struct.pack(">hhih", key, version, 3, -1) + b"\x00" * 30))
        assert closed_by_peer(s)


# -- produce -------------------------------------------------------------------------------------


def test_bad_crc_is_corrupt_message(broker):
    bad = bytearray(good_batch(3))
    bad[-2] ^= 0xFF
    with RawClient(broker.bootstrap) as client:
        part = produce(client, bytes(bad))
        assert part.error_code is ErrorCode.corrupt_message
        assert produce(client, good_batch()).error_code is ErrorCode.none  # the connection goes on


@pytest.mark.parametrize("magic", [0, 1])
def test_old_magic_is_refused(broker, magic):
    old = bytearray(good_batch())
    old[16] = magic
    with RawClient(broker.bootstrap) as client:
        part = produce(client, bytes(old))
    assert part.error_code in (ErrorCode.unsupported_for_message_format, ErrorCode.corrupt_message)


def test_batch_over_message_max_bytes(broker):
    with RawClient(broker.bootstrap) as client:
        assert produce(client, good_batch(size=30_000)).error_code is ErrorCode.message_too_large
        assert produce(client, good_batch(size=10_000)).error_code is ErrorCode.none


def test_garbage_records_are_corrupt_message(broker):
    with RawClient(broker.bootstrap) as client:
        assert produce(client, os.urandom(100)).error_code in (ErrorCode.corrupt_message,
                                                               ErrorCode.unsupported_for_message_format)
        assert produce(client, good_batch()[:-3]).error_code is ErrorCode.corrupt_message


def test_unknown_topic_without_auto_create(broker):
    with RawClient(broker.bootstrap) as client:
        assert produce(client, good_batch(), topic="nope").error_code is ErrorCode.unknown_topic_or_partition
        meta = client.request(MetadataRequest(topics=(MetadataRequestTopic(name="nope"),),
                                              allow_auto_topic_creation=True,
                                              include_cluster_authorized_operations=False,
                                              include_topic_authorized_operations=False))
    assert [(t.name, t.error_code) for t in meta.topics] == [("nope", ErrorCode.unknown_topic_or_partition)]
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 10_000,
                  "topic.metadata.propagation.max.ms": 100})
    errors = []
    p.produce("nope", b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(WAIT_S)
    # librdkafka reports the broker's UNKNOWN_TOPIC_OR_PARTITION as its local _UNKNOWN_TOPIC (-188)
    assert [e.code() for e in errors] in ([ErrorCode.unknown_topic_or_partition.value], [-188])


@pytest.mark.parametrize("name", ["bad name", "a" * 250, "..", "slash/topic"])
def test_invalid_topic_names(broker, name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    [future] = admin.create_topics([NewTopic(name, 1, 1)]).values()
    with pytest.raises(Exception) as info:
        future.result(WAIT_S)
    assert info.value.args[0].code() == ErrorCode.invalid_topic_exception.value
    with RawClient(broker.bootstrap) as client:
        meta = client.request(MetadataRequest(topics=(MetadataRequestTopic(name=name),),
                                              allow_auto_topic_creation=True,
                                              include_cluster_authorized_operations=False,
                                              include_topic_authorized_operations=False))
    assert [t.error_code for t in meta.topics] == [ErrorCode.invalid_topic_exception]


def test_out_of_range_fetch_offset(broker):
    kafka = kafka_module()
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, auto_offset_reset="none")
    tp = kafka.TopicPartition(WITNESS, 0)
    c.assign([tp])
    c.seek(tp, 10**6)
    try:
        with pytest.raises(kafka.errors.OffsetOutOfRangeError):
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                c.poll(timeout_ms=200)
    finally:
        c.close()


def test_acks_0_with_a_bad_batch_closes_the_connection_and_loses_nothing(broker):
    bad = bytearray(good_batch())
    bad[-1] ^= 1
    with RawClient(broker.bootstrap) as client:
        client.sock.sendall(frame(encode_request(ProduceRequest(
            transactional_id=None, acks=0, timeout=datetime.timedelta(seconds=10),
            topic_data=(TopicProduceData(name=WITNESS, partition_data=(
                PartitionProduceData(index=0, records=bytes(bad)),)),),
        ), 1)))
        assert closed_by_peer(client.sock)  # Kafka's only way to tell an acks=0 producer


# -- requests that decode but are invalid (issue 9; every field of every API: test_request_sweep.py)


def test_issue_9_unknown_isolation_level_is_invalid_request(broker):
    request = build(request_schema(ApiKey.FETCH, 11), {
        "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 7, "session_id": 0,
        "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": WITNESS, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                     "partition_max_bytes": 1 << 20}]}]})
    with RawClient(broker.bootstrap) as client:
        body = client.request(request)
        assert body.error_code is ErrorCode.invalid_request
        assert [[p.error_code for p in t.partitions] for t in body.responses] == [[ErrorCode.invalid_request]]
        fine = client.request(dataclasses.replace(request, isolation_level=1))
    assert fine.error_code is ErrorCode.none  # the same connection goes on
    assert not broker.logged("Traceback")


def test_issue_9_metadata_v10_with_a_null_topic_name_is_invalid_request(broker):
    # Before: the handler's answer could not be encoded and the connection hung.
    request = build(request_schema(ApiKey.METADATA, 10), {
        "topics": [{"name": None}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False})
    with RawClient(broker.bootstrap) as client:
        body = client.request(request)
    assert [t.error_code for t in body.topics] == [ErrorCode.invalid_request]


def test_issue_9_null_where_the_schema_forbids_it_closes_with_one_line(broker):
    request = ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=1),
                             topic_data=(TopicProduceData(name=WITNESS, partition_data=()),))
    payload = bytearray(encode_request(request, 41))
    assert payload[-4:] == b"\x00\x00\x00\x00"  # the empty partition_data array: make it null
    payload[-4:] = b"\xff\xff\xff\xff"
    with raw(broker) as s:
        s.sendall(frame(bytes(payload)))
        assert closed_by_peer(s)
    wait_logged(broker, "(correlation id 41) failed: non-nullable field topic_data.partition_data")
    assert sum("(correlation id 41)" in line for line in broker.log_lines) == 1


# -- more than one batch per partition (issue 9) ----------------------------------------------------


def init_producer_id(client: RawClient) -> tuple[int, int]:
    body = client.request(build(request_schema(ApiKey.INIT_PRODUCER_ID, 4), {
        "transactional_id": None, "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1}))
    assert body.error_code is ErrorCode.none
    return body.producer_id, body.producer_epoch


def idempotent_batch(pid: int, epoch: int, sequence: int, n: int = 5) -> bytes:
    return bytes(build_batch([Record(key=None, value=b"s%d" % (sequence + i), timestamp=1000) for i in range(n)],
                             producer_id=pid, producer_epoch=epoch, base_sequence=sequence))


def produce_parts(client: RawClient, version: int, parts: list[bytes]) -> list[Any]:
    body = client.request(build(request_schema(ApiKey.PRODUCE, version), {
        "transactional_id": None, "acks": -1, "timeout": 10_000,
        "topic_data": [{"name": MULTI, "partition_data": [
            {"index": i, "records": records} for i, records in enumerate(parts)]}]}))
    [topic] = body.responses
    return list(topic.partition_responses)


def end_offset(client: RawClient, partition: int) -> int:
    body = client.request(build(request_schema(ApiKey.LIST_OFFSETS, 7), {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": MULTI, "partitions": [{"partition_index": partition, "timestamp": -1}]}]}))
    return body.topics[0].partitions[0].offset


@pytest.mark.parametrize("version", [3, 7, 8, 9, 11])
def test_issue_9_two_batches_for_one_partition_are_invalid_record(broker, version):
    # Kafka's ProduceRequest.validateRecords: exactly one batch per partition. Before, sequences
    # 0-4 then 5-9 were accepted once and refused as OUT_OF_ORDER_SEQUENCE_NUMBER later.
    with RawClient(broker.bootstrap) as client:
        pid, epoch = init_producer_id(client)
        before = end_offset(client, 0), end_offset(client, 1)
        two = idempotent_batch(pid, epoch, 0) + idempotent_batch(pid, epoch, 5)
        first, second = produce_parts(client, version, [two, good_batch()])
        assert first.error_code is ErrorCode.invalid_record
        if version >= 8:
            assert "one record batch per partition" in first.error_message
        assert second.error_code is ErrorCode.none and second.base_offset == before[1]
        assert end_offset(client, 0) == before[0]  # nothing of it was written
        again, _ = produce_parts(client, version, [two, good_batch()])
        assert again.error_code is ErrorCode.invalid_record  # the same answer every time
        # The producer's state did not move: its sequence 0 is still the next one expected.
        [single] = produce_parts(client, version, [idempotent_batch(pid, epoch, 0)])
        assert single.error_code is ErrorCode.none and single.base_offset == before[0]


def test_issue_9_empty_partition_data_is_invalid_record(broker):
    with RawClient(broker.bootstrap) as client:
        [part] = produce_parts(client, 9, [b""])
    assert part.error_code is ErrorCode.invalid_record


def test_issue_9_clients_send_one_batch_per_partition(broker):
    # librdkafka and kafka-python pack one batch per partition per request, so they are unaffected.
    n = 3000
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 20,
                  "batch.size": 16384, "max.in.flight.requests.per.connection": 5})
    failed = []
    for i in range(n):
        p.produce("clients", b"c%d" % i, partition=0,
                  on_delivery=lambda err, msg: failed.append(err) if err else None)
    assert p.flush(WAIT_S) == 0 and failed == []
    kafka = kafka_module()
    kp = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, linger_ms=20,
                             batch_size=16384)
    futures = [kp.send("clients", b"k%d" % i, partition=0) for i in range(n)]
    kp.flush(WAIT_S)
    assert all(f.get(WAIT_S).offset >= 0 for f in futures)
    kp.close()
    with RawClient(broker.bootstrap) as client:
        body = client.request(build(request_schema(ApiKey.LIST_OFFSETS, 7), {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": "clients", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}))
    assert body.topics[0].partitions[0].offset == 2 * n


@pytest.mark.parametrize("key,fields", [
    (ApiKey.CREATE_TOPICS, {"validate_only": False, "timeout": 5000, "topics": [
        {"name": "huge", "num_partitions": (1 << 31) - 1, "replication_factor": -1, "assignments": [],
         "configs": []}]}),
    (ApiKey.CREATE_PARTITIONS, {"validate_only": False, "timeout": 5000, "topics": [
        {"name": "target", "count": (1 << 31) - 1, "assignments": None}]}),
])
def test_issue_9_partition_counts_beyond_one_operation_are_policy_violation(broker, key, fields):
    # Before: the broker set out to create 2^31 partition logs. Kafka's controller refuses an
    # operation over 10000 records ("excessively large batch operation").
    with RawClient(broker.bootstrap) as client:
        body = client.request(build(request_schema(key, 3), fields))
        meta = client.request(MetadataRequest(topics=(MetadataRequestTopic(name="target"),
                                                      MetadataRequestTopic(name="huge")),
                                              allow_auto_topic_creation=False,
                                              include_cluster_authorized_operations=False,
                                              include_topic_authorized_operations=False))
    [result] = body.topics if key is ApiKey.CREATE_TOPICS else body.results
    assert result.error_code is ErrorCode.policy_violation
    assert "excessively large" in result.error_message
    assert [(t.name, t.error_code, len(t.partitions)) for t in meta.topics] == [
        ("target", ErrorCode.none, 1), ("huge", ErrorCode.unknown_topic_or_partition, 0)]
