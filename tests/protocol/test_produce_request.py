"""protocol/produce_request.py against kio's reader, which it replaced for Produce v3-13.

Requests are written by kio's encoder (tests/kafka_wire.py) and read both ways: by the hand reader
through decode_request, and by kio's readers after the bounds walk (protocol/bounds.py) with
dispatch's null check, which is what decode_request did for Produce before. Tagged fields, which
kio neither writes nor reads, come from a small writer here that is checked against kio's bytes.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial.errors import UnexpectedNull

from broker.error_response import null_in_non_nullable
from protocol.codec import RefusedRequest, _request_readers, decode_request, request_schema
from protocol.errors import ErrorCode, FrameBoundsError, KafkaError
from protocol.produce_request import VERSIONS, NullFieldError, ProduceRequest, read_produce_request
from protocol.records import Record, build_batch
from tests.kafka_wire import encode_request
from tests.request_samples import encode_header, sample_request, variants

BATCH = bytes(build_batch([Record(key=b"k", value=b"v" * 100, timestamp=1000)]))
TOPIC_ID = uuid.UUID("5f2d1c7e-9a0b-4c3d-8e6f-102132435465")
# (name, topic_id, [(index, records)]): one shape for every version (v13 sends the id, not the name).
Topics = Sequence[tuple[str, uuid.UUID, Sequence[tuple[int, bytes | None]]]]
SEVERAL: Topics = [("orders", TOPIC_ID, [(0, BATCH), (7, None), (2, b"")]),
                   ("ünïcode-tópic", uuid.UUID(int=0), []),
                   ("x" * 200, uuid.uuid4(), [(2**31 - 1, BATCH)])]


def everything(api_key: int, version: int) -> bool:
    return True


def kio_request(version: int, topics: Topics, transactional_id: str | None = None, acks: int = -1,
                timeout_ms: int = 30_000) -> Any:
    schema = request_schema(0, version)
    mod = __import__(schema.__module__, fromlist=["_"])
    key = "topic_id" if version >= 13 else "name"
    return schema(transactional_id=transactional_id, acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms),
                  topic_data=tuple(mod.TopicProduceData(**{key: topic_id if version >= 13 else name},
                                                        partition_data=tuple(mod.PartitionProduceData(
                                                            index=i, records=r) for i, r in parts))
                                   for name, topic_id, parts in topics))


def kio_read(frame: bytes, version: int) -> tuple[str | None, Any]:
    """What decode_request gave for Produce before: the bounds walk, then kio's readers."""
    check_bounds, read_header, read_body = _request_readers(0, version)
    check_bounds(frame)
    header, pos = read_header(frame, 0)
    body, _ = read_body(frame, pos)
    return header.client_id, body


def assert_agrees(frame: bytes | memoryview, version: int, expected_frame: bytes | None = None) -> ProduceRequest:
    """The hand reader and kio read the same request from frame (kio from expected_frame)."""
    header, body = decode_request(frame, everything)
    client_id, theirs = kio_read(bytes(frame) if expected_frame is None else expected_frame, version)
    assert (header.api_key, header.api_version, header.client_id) == (0, version, client_id)
    assert (body.transactional_id, body.acks) == (theirs.transactional_id, theirs.acks)
    assert body.timeout_ms == theirs.timeout // datetime.timedelta(milliseconds=1)
    assert len(body.topic_data) == len(theirs.topic_data)
    for ours, kio in zip(body.topic_data, theirs.topic_data, strict=True):
        if version >= 13:
            assert (ours.name, ours.topic_id) == (None, kio.topic_id)
        else:
            assert (ours.name, ours.topic_id) == (kio.name, None)
        assert [(p.index, None if p.records is None else bytes(p.records)) for p in ours.partition_data] == \
            [(p.index, p.records) for p in kio.partition_data]
    return body


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("client_id", [None, "", "rdkafka", "clïent-✓"])
@pytest.mark.parametrize("transactional_id", [None, "", "tx-✓"])
def test_agrees_with_kio(version: int, client_id: str | None, transactional_id: str | None) -> None:
    for topics in (SEVERAL, [], SEVERAL[1:2]):
        frame = encode_request(kio_request(version, topics, transactional_id, acks=1, timeout_ms=-5), 9, client_id)
        assert_agrees(frame, version)
        assert_agrees(memoryview(bytearray(frame)).toreadonly(), version)


@pytest.mark.parametrize("version", VERSIONS)
def test_records_are_views_of_a_large_frame_and_bytes_of_a_small_one(version: int) -> None:
    frame = encode_request(kio_request(version, [("t", TOPIC_ID, [(0, BATCH), (1, BATCH)])]), 1)
    view = memoryview(bytearray(frame)).toreadonly()  # as protocol/frames.py hands out a large frame
    _, body = decode_request(view, everything)
    for p in body.topic_data[0].partition_data:
        assert isinstance(p.records, memoryview) and p.records.obj is view.obj and p.records == BATCH
    _, body = decode_request(frame, everything)
    assert [type(p.records) for p in body.topic_data[0].partition_data] == [bytes, bytes]


def test_v13_zero_topic_id_reads_as_none_as_kio_reads_it() -> None:
    frame = encode_request(kio_request(13, [("t", uuid.UUID(int=0), [(0, BATCH)])]), 1)
    assert assert_agrees(frame, 13).topic_data[0].topic_id is None


def test_bytes_after_the_body_are_ignored_as_before() -> None:
    for version in VERSIONS:
        frame = encode_request(kio_request(version, SEVERAL), 1)
        assert_agrees(frame + b"\x01\xff trailing", version, expected_frame=frame)


_names = st.text(max_size=12)
_records = st.none() | st.binary(max_size=40)
_partitions = st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), _records), max_size=3)
_topics = st.lists(st.tuples(_names, st.uuids(), _partitions), max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), st.none() | _names, st.none() | _names, st.integers(-(2**15), 2**15 - 1),
       st.integers(-(2**31), 2**31 - 1), _topics)
def test_any_request_agrees_with_kio(version: int, client_id: str | None, transactional_id: str | None, acks: int,
                                     timeout_ms: int, topics: Topics) -> None:
    frame = encode_request(kio_request(version, topics, transactional_id, acks, timeout_ms), 3, client_id)
    assert_agrees(memoryview(frame), version)


# -- tagged fields: kio refuses the unknown ones; Kafka (and the hand reader) skip them -------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def compact(data: bytes | None) -> bytes:
    return b"\x00" if data is None else uvarint(len(data) + 1) + data


# Two unknown tags, one with a multi-byte tag and size; and an empty tag buffer.
TAGS = uvarint(2) + uvarint(0) + uvarint(2) + b"ab" + uvarint(300) + uvarint(130) + bytes(range(130))
NO_TAGS = b"\x00"


def flexible_frame(version: int, client_id: str | None, transactional_id: str | None, topics: Topics,
                   tags: dict[str, bytes]) -> bytes:
    """A v9+ request written here, with `tags` (by level: header, body, topic, partition) in place
    of the empty tag buffers."""
    def at(level: str) -> bytes:
        return tags.get(level, NO_TAGS)

    out = struct.pack(">hhi", 0, version, 9)
    client = None if client_id is None else client_id.encode()
    out += struct.pack(">h", -1) if client is None else struct.pack(">h", len(client)) + client
    out += at("header") + compact(None if transactional_id is None else transactional_id.encode())
    out += struct.pack(">hi", -1, 30_000) + uvarint(len(topics) + 1)
    for name, topic_id, parts in topics:
        out += topic_id.bytes if version >= 13 else compact(name.encode())
        out += uvarint(len(parts) + 1)
        for index, records in parts:
            out += struct.pack(">i", index) + compact(records) + at("partition")
        out += at("topic")
    return out + at("body")


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 9])
def test_unknown_tagged_fields_are_skipped_at_every_level(version: int) -> None:
    plain = flexible_frame(version, "c", "tx", SEVERAL, {})
    assert plain == encode_request(kio_request(version, SEVERAL, "tx"), 9, "c")  # the writer is kio's layout
    for levels in (["header"], ["body"], ["topic"], ["partition"], ["header", "body", "topic", "partition"]):
        tagged = flexible_frame(version, "c", "tx", SEVERAL, dict.fromkeys(levels, TAGS))
        assert_agrees(tagged, version, expected_frame=plain)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 9])
def test_a_tagged_field_reaching_past_the_frame_is_refused(version: int) -> None:
    for bad, why in ((uvarint(1) + uvarint(0) + uvarint(500) + b"xx", "reach past the frame"),
                     (uvarint(2**31) + b"\x00\x00", "claims 2147483648 items")):  # more tags than bytes
        frame = flexible_frame(version, "c", None, SEVERAL, {"topic": bad})
        with pytest.raises(FrameBoundsError, match=why):
            decode_request(frame, everything)


# -- malformed requests: always INVALID_REQUEST, never another exception -------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_truncation_at_every_byte_is_invalid_request(version: int) -> None:
    frame = encode_request(kio_request(version, SEVERAL, "tx-✓"), 1, "client")
    for end in range(len(frame)):
        for cut in (frame[:end], memoryview(frame)[:end]):
            with pytest.raises(KafkaError) as info:
                decode_request(cut, everything)
            assert info.value.code is ErrorCode.invalid_request
            if end >= 8:  # shorter: peek_header finds no header
                assert type(info.value) is FrameBoundsError, end
                assert info.value.message.startswith(f"malformed api key 0 v{version} request: ")


def with_count(version: int, claim: int, where: str) -> bytes:
    """A request whose topic or partition count (or tag count) claims `claim` items."""
    flexible = version >= 9
    count = uvarint(claim + 1) if flexible else struct.pack(">i", claim)
    out = struct.pack(">hhih", 0, version, 1, -1) + (NO_TAGS if flexible else b"")
    out += (b"\x00" if flexible else struct.pack(">h", -1)) + struct.pack(">hi", -1, 1000)
    if where == "topics":
        return out + count + b"\x00" * 20
    out += uvarint(2) if flexible else struct.pack(">i", 1)
    out += bytes(16) if version >= 13 else compact(b"t") if flexible else struct.pack(">h", 1) + b"t"
    return out + count + b"\x00" * 20


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("where", ["topics", "partitions"])
@pytest.mark.parametrize("claim", [2**31 - 1, 2**32 - 2, 10_000])
def test_a_count_the_frame_cannot_hold_is_refused_before_any_item(version: int, where: str, claim: int) -> None:
    if version < 9 and claim >= 2**31:
        claim = -7  # an INT32 count: negative, and not -1 (null)
    with pytest.raises(FrameBoundsError, match="claims|negative count"):
        decode_request(with_count(version, claim, where), everything)


def assert_bad_lengths_refused(frame: bytes, at: int, flexible: bool, legacy: str) -> None:
    """The length before frame[at:], a compact one if `flexible`, else of struct format `legacy`,
    made to reach past the frame, to be too long a varint, or negative; and the client_id's."""
    if flexible:
        lengths = {uvarint(2**31): "reach past the frame", b"\xff\xff\xff\xff\xff\x01": "longer than 5 bytes"}
    else:
        lengths = {struct.pack(legacy, 2 ** (8 * struct.calcsize(legacy) - 1) - 1): "reach past the frame",
                   struct.pack(legacy, -2): "negative length -2"}
    prefix = 1 if flexible else struct.calcsize(legacy)
    for length, why in lengths.items():
        bad = frame[: at - prefix] + length + frame[at:]
        with pytest.raises(FrameBoundsError, match=why):
            decode_request(bad, everything)
    client_id_too_long = frame[:8] + struct.pack(">h", 9999) + frame[10:]
    with pytest.raises(FrameBoundsError, match="9999 bytes at byte 10"):
        decode_request(client_id_too_long, everything)


@pytest.mark.parametrize("version", VERSIONS)
def test_lengths_past_the_frame_or_negative_are_refused(version: int) -> None:
    frame = encode_request(kio_request(version, [("t", TOPIC_ID, [(0, b"abcd")])]), 1, "c")
    assert_bad_lengths_refused(frame, frame.index(b"abcd"), version >= 9, ">i")


def test_a_string_that_is_not_utf8_is_invalid_request() -> None:
    for version in VERSIONS:
        frame = encode_request(kio_request(version, SEVERAL, "tx-?"), 1, "client")
        bad = frame.replace(b"tx-?", b"tx-\xff")
        with pytest.raises(KafkaError) as info:
            decode_request(bad, everything)
        assert info.value.code is ErrorCode.invalid_request and type(info.value) is KafkaError


# -- nulls where the schema forbids them --------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_nulls_are_refused_with_the_message_of_dispatchs_check(version: int) -> None:
    """Each null variant of the request sweep (tests/request_samples.py). Where the schema allows
    the null, both readers read the same request. Where it does not, the hand reader names the
    path as dispatch's null check named it after kio's reader (a null topic name kio's string
    reader refused itself, as malformed: now it is named too, as Kafka names it); decode_request
    keeps the header for the log line."""
    refused = 0
    for variant in variants(sample_request(0, version)):
        if variant.body is None:
            continue
        frame = encode_header(sample_request(0, version), 41) + variant.body
        if not variant.label.endswith("(not nullable)"):
            assert_agrees(frame, version)
            continue
        path = variant.label.split("=")[0]
        try:
            assert null_in_non_nullable(kio_read(frame, version)[1]) == path
        except UnexpectedNull:
            assert path == "topic_data.name"
        refused += 1
        with pytest.raises(RefusedRequest) as info:
            decode_request(frame, everything)
        assert info.value.message == f"non-nullable field {path} was serialized as null"
        assert (info.value.code, info.value.header.correlation_id) == (ErrorCode.invalid_request, 41)
    assert refused == (2 if version >= 13 else 3)  # topic_data, partition_data (and the name up to v12)


def null_topics(first: bytes, second: bytes) -> bytes:
    """A v3 request of two topics: `first` and `second` are each a name and a partition array."""
    return (struct.pack(">hhih", 0, 3, 1, -1) + struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 2)
            + first + second)


NAMED = struct.pack(">h", 1) + b"a"
NULL_NAME = struct.pack(">h", -1)
NO_PARTITIONS = struct.pack(">i", 0)
NULL_PARTITIONS = struct.pack(">i", -1)


@pytest.mark.parametrize(("first", "second", "path"), [
    (NAMED + NULL_PARTITIONS, NULL_NAME + NO_PARTITIONS, "topic_data.partition_data"),
    (NULL_NAME + NO_PARTITIONS, NAMED + NULL_PARTITIONS, "topic_data.name")])
def test_the_first_null_in_field_order_is_the_one_named(first: bytes, second: bytes, path: str) -> None:
    with pytest.raises(NullFieldError) as info:
        read_produce_request(null_topics(first, second), 3)
    assert info.value.message == f"non-nullable field {path} was serialized as null"
