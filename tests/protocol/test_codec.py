"""Our codec against kio's writer and reader: request headers v1 and v2 in, response headers out."""

import datetime
import struct

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3.response import ApiVersion as ApiVersionV3
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.metadata.v8.request import MetadataRequest as MetadataRequestV8
from kio.schema.metadata.v8.request import MetadataRequestTopic as MetadataRequestTopicV8
from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12
from kio.schema.metadata.v12.request import MetadataRequestTopic as MetadataRequestTopicV12
from kio.schema.metadata.v12.response import MetadataResponse as MetadataResponseV12
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData

from protocol import codec
from protocol.codec import UnsupportedRequest, decode_request, encode_response, peek_header
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from tests.kafka_wire import decode_response, encode_request


def everything(api_key: int, version: int) -> bool:
    return True


def test_request_header_v1_non_flexible_metadata():
    request = MetadataRequestV8(
        topics=(MetadataRequestTopicV8(name="orders"),), allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=True,
    )
    header, body = decode_request(encode_request(request, 42, "client-a"), everything)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 8, 42, "client-a")
    assert body == request


def test_request_header_v1_null_client_id():
    request = MetadataRequestV8(topics=None, allow_auto_topic_creation=True,
                                include_cluster_authorized_operations=False,
                                include_topic_authorized_operations=False)
    header, body = decode_request(encode_request(request, -7, None), everything)
    assert (header.correlation_id, header.client_id) == (-7, None)
    assert body.topics is None


def test_request_header_v2_flexible_metadata():
    request = MetadataRequestV12(
        topics=(MetadataRequestTopicV12(topic_id=None, name="t"),), allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    header, body = decode_request(encode_request(request, 2**31 - 1, "rdkafka"), everything)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 12, 2**31 - 1)
    assert body == request


def test_request_header_v2_flexible_api_versions():
    request = ApiVersionsRequestV3(client_software_name="librdkafka", client_software_version="2.16.1")
    header, body = decode_request(encode_request(request, 1), everything)
    assert (header.api_key, header.api_version, header.client_id) == (18, 3, "test")
    assert body == request


def test_produce_records_survive_the_codec_as_bytes():
    batch = bytes(build_batch([Record(key=b"k", value=b"v", timestamp=5)]))
    request = ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
        topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=0, records=batch),)),),
    )
    _, body = decode_request(encode_request(request, 9), everything)
    assert body.topic_data[0].partition_data[0].records == batch


def test_api_versions_response_header_is_v0_even_for_v3():
    response = ApiVersionsResponseV3(
        error_code=ErrorCode.none, api_keys=(ApiVersionV3(api_key=18, min_version=0, max_version=4),),
        throttle_time=datetime.timedelta(0),
    )
    data = encode_response(77, response)
    (size, correlation_id, error_code) = struct.unpack_from(">iih", data)
    assert size == len(data) - 4
    # v0 header: the correlation id is followed directly by the body, no tagged-fields byte.
    assert (correlation_id, error_code) == (77, 0)
    header, body = decode_response(data[4:], 18, 3)
    assert header.correlation_id == 77
    assert body == response


def test_flexible_response_has_v1_header_with_tagged_fields():
    response = MetadataResponseV12(
        throttle_time=datetime.timedelta(0), brokers=(), cluster_id="c", controller_id=1, topics=(),
    )
    data = encode_response(5, response)
    assert data[8] == 0  # empty tagged fields after the correlation id
    header, body = decode_response(data[4:], 3, 12)
    assert (header.correlation_id, body) == (5, response)


def test_unsupported_key_or_version_keeps_the_header():
    request = ApiVersionsRequestV3(client_software_name="x", client_software_version="1")
    frame = encode_request(request, 31)
    with pytest.raises(UnsupportedRequest) as info:
        decode_request(frame, lambda key, version: False)
    assert info.value.code is ErrorCode.unsupported_version
    assert (info.value.header.api_key, info.value.header.correlation_id) == (18, 31)


def test_unknown_api_key_is_unsupported_before_parsing():
    frame = struct.pack(">hhi", 999, 0, 3) + b"\xff" * 5
    with pytest.raises(UnsupportedRequest):
        decode_request(frame, lambda key, version: key != 999)


def test_truncated_body_is_invalid_request():
    request = MetadataRequestV8(topics=(MetadataRequestTopicV8(name="orders"),), allow_auto_topic_creation=False,
                                include_cluster_authorized_operations=False,
                                include_topic_authorized_operations=False)
    frame = encode_request(request, 1)
    with pytest.raises(KafkaError) as info:
        decode_request(frame[:-5], everything)
    assert info.value.code is ErrorCode.invalid_request


def test_frame_shorter_than_a_header_is_invalid_request():
    with pytest.raises(KafkaError) as info:
        peek_header(b"\x00\x03\x00")
    assert info.value.code is ErrorCode.invalid_request


# The client side (broker/embedded.py's admin requests), checked against kio's own writer and reader.

@pytest.mark.parametrize("request_entity", [
    ApiVersionsRequestV3(client_software_name="eosbroker", client_software_version="0.1"),
    MetadataRequestV8(topics=None, allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                      include_topic_authorized_operations=False),
])
def test_encode_request_is_what_kio_writes(request_entity):
    data = codec.encode_request(request_entity, 12, "embedded")
    assert data == struct.pack(">i", len(data) - 4) + encode_request(request_entity, 12, "embedded")
    header, body = decode_request(data[4:], everything)
    assert (header.correlation_id, header.client_id, body) == (12, "embedded", request_entity)


def test_decode_response_reads_what_encode_response_writes():
    response = MetadataResponseV12(
        throttle_time=datetime.timedelta(0), brokers=(), cluster_id="c", controller_id=1, topics=(),
    )
    assert codec.decode_response(encode_response(-3, response)[4:], 3, 12) == (-3, response)


def test_truncated_response_is_an_error():
    response = ApiVersionsResponseV3(error_code=ErrorCode.none, api_keys=(), throttle_time=datetime.timedelta(0))
    with pytest.raises(KafkaError) as raised:
        codec.decode_response(encode_response(1, response)[4:-2], 18, 3)
    assert raised.value.code == ErrorCode.corrupt_message
