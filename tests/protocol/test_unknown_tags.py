"""Unknown tagged fields are skipped, as Kafka skips them (KIP-482), wherever they sit: the request
header, the body, an entity inside an array, and inside a known tagged field's value."""

import datetime
import struct
import uuid

import pytest
from kio.schema.fetch.v15.request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from protocol import bounds
from protocol.codec import _request_readers, decode_request
from protocol.errors import ErrorCode, KafkaError
from protocol.records import encode_uvarint
from protocol.unknown_tags import strip_unknown_tags
from tests.kafka_wire import encode_request

TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def everything(api_key: int, version: int) -> bool:
    return True


def tags(*items: tuple[int, bytes]) -> bytes:
    """A tagged-field section: count, then (tag, size, value) each."""
    out = encode_uvarint(len(items))
    for tag, value in items:
        out += encode_uvarint(tag) + encode_uvarint(len(value)) + value
    return out


def header_v2(api_key: int, version: int, correlation_id: int, section: bytes) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, 3) + b"cid" + section


def metadata_body(topic_section: bytes, body_section: bytes) -> bytes:
    """MetadataRequest v12 with one topic "t": its entry and the body each end in `section`."""
    topic = TOPIC_ID.bytes + b"\x02t" + topic_section
    return b"\x02" + topic + b"\x01\x00" + body_section


def test_unknown_tags_in_header_body_and_array_items_are_skipped():
    clean = header_v2(3, 12, 5, tags()) + metadata_body(tags(), tags())
    tagged = header_v2(3, 12, 5, tags((7, b"xx"))) + metadata_body(
        tags((0, b""), (300, b"\xff" * 200)), tags((2, b"abc"), (9, b"")))
    header, body = decode_request(tagged, everything)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 12, 5, "cid")
    assert body == decode_request(clean, everything)[1]
    assert body == MetadataRequest(topics=(MetadataRequestTopic(topic_id=TOPIC_ID, name="t"),),
                                   allow_auto_topic_creation=True, include_topic_authorized_operations=False)


def fetch_request(replica_state: ReplicaState | None) -> FetchRequest:
    partition = FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=7, last_fetched_epoch=-1,
                               log_start_offset=-1, partition_max_bytes=1 << 20)
    return FetchRequest(
        cluster_id=None, replica_state=replica_state, max_wait=datetime.timedelta(milliseconds=500),
        min_bytes=1, max_bytes=1 << 20, isolation_level=1, session_id=0, session_epoch=-1,
        topics=(FetchTopic(topic_id=TOPIC_ID, partitions=(partition,)),), forgotten_topics_data=(),
        rack_id="",
    )


def test_a_known_tagged_value_keeps_its_fields_and_loses_its_unknown_ones():
    # Fetch v15 ends in its tagged fields; kio writes ReplicaState (tag 1) as 4 + 8 bytes and an
    # empty section. Here it also holds unknown tag 3, and an unknown tag 9 follows it.
    request = fetch_request(ReplicaState(replica_id=-1, replica_epoch=42))
    clean = encode_request(request, 11, "cid")
    state = struct.pack(">iq", -1, 42)
    assert clean.endswith(tags((1, state + tags())))
    prefix = clean[: -len(tags((1, state + tags())))]
    tagged = prefix + tags((1, state + tags((3, b"zz"))), (9, b"?"))
    check, read_header, read_body = _request_readers(1, 15)
    stripped = strip_unknown_tags(tagged, check)
    assert stripped == clean
    assert read_body(stripped, read_header(stripped, 0)[1])[0] == request
    # Fetch itself is read by hand (protocol/fetch_request.py), which skips them as it goes.
    header, body = decode_request(tagged, everything)
    assert header.correlation_id == 11
    assert body.replica_state == (-1, 42) and body.topics[0].topic_id == TOPIC_ID


def test_the_rebuilt_frame_is_the_clean_one():
    clean = header_v2(3, 12, 1, tags()) + metadata_body(tags(), tags())
    tagged = header_v2(3, 12, 1, tags((4, b"h"))) + metadata_body(tags((5, b"")), tags((6, b"bb")))
    check = _request_readers(3, 12)[0]
    assert strip_unknown_tags(tagged, check) == clean
    assert strip_unknown_tags(memoryview(tagged), check) == clean
    assert getattr(bounds.recording, "sections", None) is None  # nothing left recording


def test_a_frame_without_unknown_tags_is_rebuilt_unchanged():
    clean = encode_request(fetch_request(ReplicaState(replica_id=3, replica_epoch=9)), 1)
    assert strip_unknown_tags(clean, _request_readers(1, 15)[0]) == clean


@pytest.mark.parametrize("section", [
    tags((8, b"abc"))[:-1],                 # the value is one byte short of its size
    b"\x02" + encode_uvarint(8) + b"\x00",  # two fields claimed, one present
])
def test_an_unknown_tag_that_overruns_the_frame_is_invalid_request(section):
    frame = header_v2(3, 12, 1, tags()) + metadata_body(tags(), b"") + section
    with pytest.raises(KafkaError) as caught:
        decode_request(frame, everything)
    assert caught.value.code == ErrorCode.invalid_request
    assert getattr(bounds.recording, "sections", None) is None


def test_unknown_tag_inside_a_known_value_that_overruns_it_is_invalid_request():
    # The unknown tag's size reaches past the known ReplicaState value it sits in.
    request = fetch_request(ReplicaState(replica_id=-1, replica_epoch=1))
    clean = encode_request(request, 1)
    state = struct.pack(">iq", -1, 1)
    prefix = clean[: -len(tags((1, state + tags())))]
    inner = state + b"\x01\x03\x05zz"  # tag 3 claims 5 bytes, 2 remain in the value
    with pytest.raises(KafkaError) as caught:
        decode_request(prefix + tags((1, inner)), everything)
    assert caught.value.code == ErrorCode.invalid_request
