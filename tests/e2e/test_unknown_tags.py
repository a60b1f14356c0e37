"""A client may send tagged fields the broker does not know (KIP-482): the broker skips them, as
Kafka does, and answers the request; the connection stays open."""

from __future__ import annotations

import datetime
import struct
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from protocol.records import encode_uvarint, read_records
from tests.broker_process import BrokerProcess
from tests.kafka_wire import RawClient, decode_response, encode_request, frame, recv_frame

WAIT_S = 30.0


def tags(*items: tuple[int, bytes]) -> bytes:
    out = encode_uvarint(len(items))
    for tag, value in items:
        out += encode_uvarint(tag) + encode_uvarint(len(value)) + value
    return out


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("unknown-tags") / "data").start()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    for f in admin.create_topics([NewTopic("tagged", 1, 1)]).values():
        f.result(WAIT_S)
    producer = Producer({"bootstrap.servers": proc.bootstrap})
    for i in range(5):
        producer.produce("tagged", b"v%d" % i, partition=0)
    assert producer.flush(WAIT_S) == 0
    yield proc
    proc.close()  # and no ERROR or traceback in its log


def test_metadata_with_unknown_tags_everywhere_is_answered(broker: BrokerProcess) -> None:
    header = struct.pack(">hhih", 3, 12, 77, 4) + b"test" + tags((5, b"new header field"))
    topic = b"\x00" * 16 + b"\x07tagged" + tags((1, b"x"), (1000, b"y" * 300))
    body = b"\x02" + topic + b"\x00\x00" + tags((3, b""))
    with RawClient(broker.bootstrap, WAIT_S) as client:
        client.send_raw(frame(header + body))
        response_header, response = decode_response(recv_frame(client.sock), 3, 12)
        assert response_header.correlation_id == 77
        (found,) = response.topics
        assert (found.name, found.error_code.value, len(found.partitions)) == ("tagged", 0, 1)
        # The connection is still in use.
        assert client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1")) \
            .error_code.value == 0


def test_fetch_with_an_unknown_top_level_tag_returns_the_records(broker: BrokerProcess) -> None:
    request = FetchRequest(
        cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1,
        max_bytes=1 << 20, isolation_level=1, session_id=0, session_epoch=-1,
        topics=(FetchTopic(topic="tagged", partitions=(FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="",
    )
    clean = encode_request(request, 9, "test")
    assert clean.endswith(b"\x00")  # kio wrote no tagged fields
    tagged = clean[:-1] + tags((2, b"\x01\x02"), (64, b"future"))
    with RawClient(broker.bootstrap, WAIT_S) as client:
        client.send_raw(frame(tagged))
        response_header, response = decode_response(recv_frame(client.sock), 1, 12)
    assert response_header.correlation_id == 9
    (partition,) = response.responses[0].partitions
    assert partition.error_code.value == 0
    records = [r.value for _, batch in read_records(partition.records) for r in batch]
    assert records == [b"v%d" % i for i in range(5)]
