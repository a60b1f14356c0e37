"""Pipelined requests on one connection (a producer keeps five in flight): the broker may send the
answers to requests that arrived together in one write, but always in request order, never held
behind a request that waits (a long-polling Fetch), and never lost when a later request closes
the connection."""

from __future__ import annotations

import datetime
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.kafka_wire import RawClient, closed_by_peer, decode_response, encode_request, frame, recv_frame

pytestmark = pytest.mark.e2e

GUARD_S = 30.0  # a guard against a hang, not a speed limit


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("pipelining") / "data").start()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    for f in admin.create_topics([NewTopic(t, 2, 1) for t in ("burst", "held", "closing")]).values():
        f.result(GUARD_S)
    yield proc
    proc.close()


def produce_request(topic: str, partition: int, value: bytes) -> ProduceRequest:
    records = bytes(build_batch([Record(key=None, value=value, timestamp=1000)]))
    return ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10),
        topic_data=(TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=partition,
                                                                                      records=records),)),),
    )


def long_poll(topic: str, partition: int, offset: int) -> FetchRequest:
    part = FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                          log_start_offset=-1, partition_max_bytes=1 << 20)
    return FetchRequest(cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(minutes=10), min_bytes=1,
                        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                        topics=(FetchTopic(topic=topic, partitions=(part,)),), forgotten_topics_data=(),
                        rack_id="")


def send_all(sock: socket.socket, requests: list[Any], first_id: int = 1) -> None:
    sock.sendall(b"".join(frame(encode_request(r, first_id + i)) for i, r in enumerate(requests)))


def answers(sock: socket.socket, requests: list[Any], first_id: int = 1) -> list[Any]:
    out = []
    for i, request in enumerate(requests):
        header, body = decode_response(recv_frame(sock), request.__api_key__, request.__version__)
        assert header.correlation_id == first_id + i
        out.append(body)
    return out


def connect(broker: BrokerProcess) -> socket.socket:
    host, port = broker.bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=GUARD_S)


def base_offset(body: Any) -> int:
    [part] = body.responses[0].partition_responses
    assert part.error_code == ErrorCode.none, part.error_message
    return int(part.base_offset)


def warm_up(broker: BrokerProcess, topic: str) -> None:
    with RawClient(broker.bootstrap) as client:  # offset 0, so that the rest start at 1
        [part] = client.request(produce_request(topic, 0, b"first")).responses[0].partition_responses
        assert part.error_code == ErrorCode.none


def test_answers_to_a_burst_come_back_in_order(broker: BrokerProcess) -> None:
    warm_up(broker, "burst")
    requests: list[Any] = []
    for i in range(40):
        requests.append(produce_request("burst", 0, b"v%d" % i))
        if i % 10 == 9:
            requests.append(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    with connect(broker) as sock:
        send_all(sock, requests)
        bodies = answers(sock, requests)
    offsets = [base_offset(b) for b, r in zip(bodies, requests, strict=True) if isinstance(r, ProduceRequest)]
    assert offsets == list(range(1, 41))
    assert all(b.error_code == ErrorCode.none for b in bodies if not hasattr(b, "responses"))


def test_an_answer_is_not_held_behind_a_long_poll(broker: BrokerProcess) -> None:
    """Produce then a Fetch that waits for data nobody has written yet, sent together: the
    produce's answer arrives while the fetch still waits (it would be stuck behind it for ten
    minutes if held), and the fetch is answered once another client writes."""
    warm_up(broker, "held")
    with connect(broker) as sock:
        requests = [produce_request("held", 0, b"acked"), long_poll("held", 1, 0)]
        send_all(sock, requests)
        header, body = decode_response(recv_frame(sock), requests[0].__api_key__, requests[0].__version__)
        assert header.correlation_id == 1 and base_offset(body) == 1
        with RawClient(broker.bootstrap) as other:
            [part] = other.request(produce_request("held", 1, b"wake")).responses[0].partition_responses
            assert part.error_code == ErrorCode.none
        header, fetched = decode_response(recv_frame(sock), requests[1].__api_key__, requests[1].__version__)
    assert header.correlation_id == 2
    [part] = fetched.responses[0].partitions
    assert part.error_code == ErrorCode.none and part.high_watermark == 1 and part.records


def test_answers_before_a_request_that_closes_the_connection_are_sent(broker: BrokerProcess) -> None:
    warm_up(broker, "closing")
    broker.expect_log(r"unsupported request")
    requests = [produce_request("closing", 0, b"v%d" % i) for i in range(5)]
    with connect(broker) as sock:
        bad = struct.pack(">hhi", 9999, 0, 99) + struct.pack(">h", 1) + b"x"  # an API key nobody has
        sock.sendall(b"".join(frame(encode_request(r, 1 + i)) for i, r in enumerate(requests)) + frame(bad))
        bodies = answers(sock, requests)
        assert closed_by_peer(sock)
    assert [base_offset(b) for b in bodies] == list(range(1, 6))
