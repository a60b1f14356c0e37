"""protocol/fetch_request.py against kio's reader, which it replaced for Fetch v4-18.

Requests are written by kio's encoder (tests/kafka_wire.py) and read both ways: by the hand reader
through decode_request, and by kio's readers after the bounds walk (protocol/bounds.py) with
dispatch's null check, which is what decode_request did for Fetch before. Unknown tagged fields,
which kio neither writes nor reads, come from a small writer here that is checked against kio's
bytes; the known ones (cluster_id, replica_state, replica_directory_id, high_watermark) kio writes.
"""

from __future__ import annotations

import dataclasses
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
from protocol.fetch_request import (
    VERSIONS,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
    ReplicaState,
    read_fetch_request,
)
from protocol.readable import NullFieldError
from tests.kafka_wire import encode_request
from tests.protocol.test_produce_request import (
    NAMED,
    NO_PARTITIONS,
    NO_TAGS,
    NULL_NAME,
    NULL_PARTITIONS,
    assert_bad_lengths_refused,
    compact,
    everything,
    uvarint,
)
from tests.request_samples import encode_header, sample_request, variants

TOPIC_ID = uuid.UUID("5f2d1c7e-9a0b-4c3d-8e6f-102132435465")
ZERO = uuid.UUID(int=0)
FLEXIBLE = [v for v in VERSIONS if v >= 12]
NO_HIGH_WATERMARK = (1 << 63) - 1


def part(partition: int = 0, fetch_offset: int = 0, **fields: Any) -> dict[str, Any]:
    """A partition's fields by Kafka's names; a version keeps the ones it has."""
    return {"partition": partition, "fetch_offset": fetch_offset, "partition_max_bytes": 1 << 20, **fields}


# (name, topic id, partitions): one shape for every version (v13+ sends the id, not the name).
Topics = Sequence[tuple[str, uuid.UUID, Sequence[dict[str, Any]]]]
Forgotten = Sequence[tuple[str, uuid.UUID, Sequence[int]]]
SEVERAL: Topics = [("orders", TOPIC_ID, [part(0, 7, current_leader_epoch=3, log_start_offset=2, last_fetched_epoch=1),
                                         part(9, 1 << 40)]),
                   ("ünïcode-tópic", ZERO, []),
                   ("x" * 200, uuid.UUID(int=7), [part(2**31 - 1, -1)])]
FORGOTTEN: Forgotten = [("gone", uuid.UUID(int=9), [0, 5, 2**31 - 1]), ("empty", ZERO, [])]


def _pick(cls: type[Any], **fields: Any) -> Any:
    """`cls` (a kio entity of some version) from the fields it has."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in fields.items() if k in names})


def kio_request(version: int, topics: Topics = SEVERAL, forgotten: Forgotten = (), *, max_wait_ms: int = 500,
                replica_state: tuple[int, int] | None = None, **fields: Any) -> Any:
    schema = request_schema(1, version)
    mod = __import__(schema.__module__, fromlist=["_"])
    if replica_state is not None and version >= 15:
        fields["replica_state"] = mod.ReplicaState(replica_id=replica_state[0], replica_epoch=replica_state[1])
    fetch_topics = tuple(_pick(mod.FetchTopic, topic=name, topic_id=topic_id,
                               partitions=tuple(_pick(mod.FetchPartition, **p) for p in parts))
                         for name, topic_id, parts in topics)
    forgotten_topics = tuple(_pick(mod.ForgottenTopic, topic=name, topic_id=topic_id, partitions=tuple(parts))
                             for name, topic_id, parts in forgotten) if version >= 7 else ()
    defaults = {"min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0}
    return _pick(schema, max_wait=datetime.timedelta(milliseconds=max_wait_ms), topics=fetch_topics,
                 forgotten_topics_data=forgotten_topics, **{**defaults, **fields})


def kio_read(frame: bytes, version: int) -> tuple[str | None, Any]:
    """What decode_request gave for Fetch before: the bounds walk, then kio's readers."""
    check_bounds, read_header, read_body = _request_readers(1, version)
    check_bounds(frame)
    header, pos = read_header(frame, 0)
    body, _ = read_body(frame, pos)
    return header.client_id, body


def as_read(kio: Any) -> FetchRequest:
    """kio's request as the hand reader gives it: every version's fields, Kafka's defaults where
    the version has none, max_wait in milliseconds and replica_id from replica_state (v15+)."""
    state = getattr(kio, "replica_state", None)
    topics = [FetchTopic(getattr(t, "topic", None), getattr(t, "topic_id", None), [
        FetchPartition(p.partition, getattr(p, "current_leader_epoch", -1), p.fetch_offset,
                       getattr(p, "last_fetched_epoch", -1), getattr(p, "log_start_offset", -1),
                       p.partition_max_bytes, getattr(p, "replica_directory_id", None),
                       getattr(p, "high_watermark", NO_HIGH_WATERMARK)) for p in t.partitions])
              for t in kio.topics]
    forgotten = [ForgottenTopic(getattr(t, "topic", None), getattr(t, "topic_id", None), tuple(t.partitions))
                 for t in getattr(kio, "forgotten_topics_data", ())]
    return FetchRequest(
        kio.replica_id if state is None else state.replica_id, kio.max_wait // datetime.timedelta(milliseconds=1),
        kio.min_bytes, kio.max_bytes, kio.isolation_level, getattr(kio, "session_id", 0),
        getattr(kio, "session_epoch", -1), topics, forgotten, getattr(kio, "rack_id", ""),
        getattr(kio, "cluster_id", None), None if state is None else ReplicaState(*dataclasses.astuple(state)))


def assert_agrees(frame: bytes | memoryview, version: int, expected_frame: bytes | None = None) -> FetchRequest:
    """The hand reader and kio read the same request from frame (kio from expected_frame)."""
    header, body = decode_request(frame, everything)
    client_id, theirs = kio_read(bytes(frame) if expected_frame is None else expected_frame, version)
    assert (header.api_key, header.api_version, header.client_id) == (1, version, client_id)
    assert type(body) is FetchRequest
    assert body == as_read(theirs)
    return body


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("client_id", [None, "", "rdkafka", "clïent-✓"])
def test_agrees_with_kio(version: int, client_id: str | None) -> None:
    for topics, forgotten in ((SEVERAL, FORGOTTEN), ([], []), (SEVERAL[1:2], FORGOTTEN[:1])):
        request = kio_request(version, topics, forgotten, max_wait_ms=-5, replica_id=3, isolation_level=1,
                              session_id=77, session_epoch=4, rack_id="rack-✓")
        frame = encode_request(request, 9, client_id)
        assert_agrees(frame, version)
        assert_agrees(memoryview(bytearray(frame)).toreadonly(), version)


@pytest.mark.parametrize("version", FLEXIBLE)
def test_known_tagged_fields_are_read(version: int) -> None:
    """cluster_id (v12+) and replica_state (v15+) in the body; replica_directory_id (v17+) and
    high_watermark (v18+) in a partition. kio writes each when it is not the default."""
    topics = [("t", TOPIC_ID, [part(1, 5, replica_directory_id=uuid.UUID(int=3), high_watermark=99),
                               part(2, 6, replica_directory_id=ZERO), part(3, 7)])]
    request = kio_request(version, topics, cluster_id="cluster-✓", replica_state=(4, 1 << 40))
    body = assert_agrees(encode_request(request, 1), version)
    assert body.cluster_id == "cluster-✓"
    assert body.replica_state == (None if version < 15 else (4, 1 << 40))
    assert body.replica_id == (-1 if version < 15 else 4)
    assert [(p.replica_directory_id, p.high_watermark) for p in body.topics[0].partitions] == [
        (uuid.UUID(int=3) if version >= 17 else None, 99 if version >= 18 else NO_HIGH_WATERMARK),
        (None, NO_HIGH_WATERMARK), (None, NO_HIGH_WATERMARK)]


def test_a_missing_replica_state_reads_as_kios_default() -> None:
    for version in range(15, 19):
        assert assert_agrees(encode_request(kio_request(version), 1), version).replica_state == (-1, -1)


def test_v13_zero_topic_id_reads_as_none_as_kio_reads_it() -> None:
    body = assert_agrees(encode_request(kio_request(13, SEVERAL, FORGOTTEN), 1), 13)
    assert [t.topic_id for t in body.topics] == [TOPIC_ID, None, uuid.UUID(int=7)]
    assert [t.topic_id for t in body.forgotten_topics_data] == [uuid.UUID(int=9), None]


def test_topic_ids_reuse_their_uuid() -> None:
    frame = encode_request(kio_request(18), 1)
    first, second = (decode_request(frame, everything)[1] for _ in range(2))
    assert first.topics[0].topic_id is second.topics[0].topic_id


def test_bytes_after_the_body_are_ignored_as_before() -> None:
    for version in VERSIONS:
        frame = encode_request(kio_request(version, SEVERAL, FORGOTTEN, cluster_id="c"), 1)
        assert_agrees(frame + b"\x01\xff trailing", version, expected_frame=frame)


_i8 = st.integers(-(2**7), 2**7 - 1)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_names = st.text(max_size=12)
_ids = st.uuids() | st.just(ZERO)
_partitions = st.lists(st.builds(part, _i32, _i64, current_leader_epoch=_i32, last_fetched_epoch=_i32,
                                 log_start_offset=_i64, partition_max_bytes=_i32,
                                 replica_directory_id=st.none() | _ids, high_watermark=_i64), max_size=3)
_topics = st.lists(st.tuples(_names, _ids, _partitions), max_size=3)
_forgotten = st.lists(st.tuples(_names, _ids, st.lists(_i32, max_size=3)), max_size=2)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), st.none() | _names, _topics, _forgotten,
       st.fixed_dictionaries({"replica_id": _i32, "max_wait_ms": _i32, "min_bytes": _i32, "max_bytes": _i32,
                              "isolation_level": _i8, "session_id": _i32, "session_epoch": _i32, "rack_id": _names,
                              "cluster_id": st.none() | _names, "replica_state": st.tuples(_i32, _i64)}))
def test_any_request_agrees_with_kio(version: int, client_id: str | None, topics: Topics, forgotten: Forgotten,
                                     fields: dict[str, Any]) -> None:
    frame = encode_request(kio_request(version, topics, forgotten, **fields), 3, client_id)
    assert_agrees(memoryview(frame), version)


# -- unknown tagged fields: kio refuses them; Kafka (and the hand reader) skip them -------------------


# Two unknown tags (Fetch knows 0 and 1 at most), one with a multi-byte tag and size; and none.
TAGS = uvarint(2) + uvarint(5) + uvarint(2) + b"ab" + uvarint(300) + uvarint(130) + bytes(range(130))
LEVELS = ("header", "partition", "topic", "forgotten", "body")


def flexible_frame(version: int, topics: Topics, forgotten: Forgotten, tags: dict[str, bytes]) -> bytes:
    """A v12+ request of kio_request's defaults written here, with `tags` (by level) in place of
    the empty tag buffers."""
    def at(level: str) -> bytes:
        return tags.get(level, NO_TAGS)

    out = struct.pack(">hhih", 1, version, 9, 1) + b"c" + at("header")
    if version < 15:
        out += struct.pack(">i", -1)
    out += struct.pack(">iiibii", 500, 1, 1 << 20, 0, 0, -1) + uvarint(len(topics) + 1)
    for name, topic_id, parts in topics:
        out += topic_id.bytes if version >= 13 else compact(name.encode())
        out += uvarint(len(parts) + 1)
        for p in parts:
            out += struct.pack(">iiqiqi", p["partition"], p.get("current_leader_epoch", -1), p["fetch_offset"],
                               p.get("last_fetched_epoch", -1), p.get("log_start_offset", -1),
                               p["partition_max_bytes"]) + at("partition")
        out += at("topic")
    out += uvarint(len(forgotten) + 1)
    for name, topic_id, indexes in forgotten:
        out += topic_id.bytes if version >= 13 else compact(name.encode())
        out += uvarint(len(indexes) + 1) + b"".join(struct.pack(">i", i) for i in indexes) + at("forgotten")
    return out + compact(b"") + at("body")


@pytest.mark.parametrize("version", FLEXIBLE)
def test_unknown_tagged_fields_are_skipped_at_every_level(version: int) -> None:
    plain = flexible_frame(version, SEVERAL, FORGOTTEN, {})
    assert plain == encode_request(kio_request(version, SEVERAL, FORGOTTEN), 9, "c")  # the writer is kio's layout
    for levels in ([level] for level in LEVELS), [LEVELS]:
        for chosen in levels:
            tagged = flexible_frame(version, SEVERAL, FORGOTTEN, dict.fromkeys(chosen, TAGS))
            assert_agrees(tagged, version, expected_frame=plain)


def known_and_unknown(*items: tuple[int, bytes]) -> bytes:
    return uvarint(len(items)) + b"".join(uvarint(tag) + uvarint(len(value)) + value for tag, value in items)


@pytest.mark.parametrize("version", range(15, 19))
def test_unknown_tags_beside_and_inside_known_ones_are_skipped(version: int) -> None:
    """replica_state holding unknown tag 3, beside unknown tag 9 and cluster_id; a partition's
    known tags beside unknown ones."""
    state = struct.pack(">iq", 6, 8)
    body = known_and_unknown((0, compact(b"cl")), (1, state + known_and_unknown((3, b"zz"))), (9, b"?"))
    partition = known_and_unknown((0, TOPIC_ID.bytes), (1, struct.pack(">q", 42)), (7, b"x"))
    frame = flexible_frame(version, SEVERAL[:1], [], {"body": body, "partition": partition})
    _, ours = decode_request(frame, everything)
    assert (ours.cluster_id, ours.replica_state, ours.replica_id) == ("cl", (6, 8), 6)
    expected = (TOPIC_ID if version >= 17 else None, 42 if version >= 18 else NO_HIGH_WATERMARK)
    assert {(p.replica_directory_id, p.high_watermark) for p in ours.topics[0].partitions} == {expected}


@pytest.mark.parametrize("version", FLEXIBLE)
def test_a_null_cluster_id_is_read_as_kafka_reads_it(version: int) -> None:
    """cluster_id is nullable in Kafka's schema; kio's reader refused a null one (a behaviour kept
    nowhere else: clients leave the tag out)."""
    frame = flexible_frame(version, SEVERAL, [], {"body": known_and_unknown((0, compact(None)))})
    with pytest.raises(UnexpectedNull):
        kio_read(frame, version)
    assert decode_request(frame, everything)[1].cluster_id is None


@pytest.mark.parametrize("version", FLEXIBLE)
def test_a_tagged_field_reaching_past_the_frame_or_its_size_is_refused(version: int) -> None:
    state = struct.pack(">iq", 6, 8) + NO_TAGS
    cases = {
        "body": [(uvarint(1) + uvarint(9) + uvarint(500) + b"xx", "reach past the frame"),
                 (uvarint(2**31) + b"\x00\x00", "claims 2147483648 items"),  # more tags than bytes
                 (known_and_unknown((0, compact(b"long")[:-2])), "reach past the frame")],
        "partition": [(uvarint(1) + uvarint(7) + uvarint(5000) + b"x", "reach past the frame")],
    }
    if version >= 15:  # replica_state cut short: at the frame's end, and inside it
        cases["body"] += [(known_and_unknown((1, state[:-1])), "index out of range"),
                          (known_and_unknown((1, state[:6])) + b"\x00" * 20, "past their tagged field's end")]
    if version >= 18:
        cases["partition"].append((known_and_unknown((1, b"1234")) + b"\x00" * 20, "past their tagged field's end"))
    for level, bad in cases.items():
        for tags, why in bad:
            frame = flexible_frame(version, SEVERAL, [], {level: tags})
            with pytest.raises(FrameBoundsError, match=why):
                decode_request(frame, everything)


# -- malformed requests: always INVALID_REQUEST, never another exception -------------------------------


def full_request(version: int) -> Any:
    """A request with every field of its version, tagged ones too."""
    topics = [*SEVERAL, ("t", TOPIC_ID, [part(1, 5, replica_directory_id=uuid.UUID(int=3), high_watermark=99)])]
    return kio_request(version, topics, FORGOTTEN, rack_id="r", cluster_id="c", replica_state=(1, 2))


@pytest.mark.parametrize("version", VERSIONS)
def test_truncation_at_every_byte_is_invalid_request(version: int) -> None:
    frame = encode_request(full_request(version), 1, "client")
    for end in range(len(frame)):
        for cut in (frame[:end], memoryview(frame)[:end]):
            with pytest.raises(KafkaError) as info:
                decode_request(cut, everything)
            assert info.value.code is ErrorCode.invalid_request
            if end >= 8:  # shorter: peek_header finds no header
                assert type(info.value) is FrameBoundsError, end
                assert info.value.message.startswith(f"malformed api key 1 v{version} request: ")
            with pytest.raises(KafkaError):  # as before
                kio_read(bytes(cut), version)


def counted(version: int, claim: int, where: str) -> bytes:
    """A request whose topic, partition, forgotten topic or forgotten partition count claims
    `claim` items, followed by 20 zero bytes (too few for 7 items of any of these)."""
    flexible = version >= 12
    count = uvarint(claim + 1) if flexible else struct.pack(">i", claim)
    out = struct.pack(">hhih", 1, version, 1, -1) + (NO_TAGS if flexible else b"")
    out += struct.pack(">i", -1) if version < 15 else b""
    out += struct.pack(">iiib", 0, 1, 1000, 0) + (struct.pack(">ii", 0, -1) if version >= 7 else b"")
    name = bytes(16) if version >= 13 else compact(b"t") if flexible else struct.pack(">h", 1) + b"t"
    one = uvarint(2) if flexible else struct.pack(">i", 1)
    none = uvarint(1) if flexible else struct.pack(">i", 0)
    if where == "topics":
        return out + count + b"\x00" * 20
    if where == "partitions":
        return out + one + name + count + b"\x00" * 20
    out += none
    if where == "forgotten":
        return out + count + b"\x00" * 20
    return out + one + name + count + b"\x00" * 20


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("where", ["topics", "partitions", "forgotten", "forgotten partitions"])
@pytest.mark.parametrize("claim", [2**31 - 1, 2**32 - 2, 10_000, 7])
def test_a_count_the_frame_cannot_hold_is_refused_before_any_item(version: int, where: str, claim: int) -> None:
    if where.startswith("forgotten") and version < 7:
        return
    if version < 12 and claim >= 2**31:
        claim = -7  # an INT32 count: negative, and not -1 (null)
    with pytest.raises(FrameBoundsError, match="claims|negative count"):
        decode_request(counted(version, claim, where), everything)
    with pytest.raises(KafkaError):  # as before
        kio_read(counted(version, claim, where), version)


@pytest.mark.parametrize("version", VERSIONS)
def test_lengths_past_the_frame_or_negative_are_refused(version: int) -> None:
    frame = encode_request(kio_request(version, [("abcd", TOPIC_ID, [])], rack_id="wxyz"), 1, "c")
    strings = ["wxyz"] if version >= 13 else ["abcd", "wxyz"] if version >= 11 else ["abcd"]
    for string in strings:  # a topic name, rack_id
        assert_bad_lengths_refused(frame, frame.index(string.encode()), version >= 12, ">h")


def test_a_string_that_is_not_utf8_is_invalid_request() -> None:
    for version in VERSIONS:
        frame = encode_request(kio_request(version, SEVERAL, FORGOTTEN), 1, "client-?")
        bad = frame.replace(b"client-?", b"client-\xff")
        with pytest.raises(KafkaError) as info:
            decode_request(bad, everything)
        assert info.value.code is ErrorCode.invalid_request and type(info.value) is KafkaError


# -- nulls where the schema forbids them --------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_nulls_are_refused_with_the_message_of_dispatchs_check(version: int) -> None:
    """Each null variant of the request sweep (tests/request_samples.py): the hand reader names
    the path as dispatch's null check named it after kio's reader (a null string, which kio's
    reader refused itself as malformed, is named too, as Kafka names it); decode_request keeps
    the header for the log line."""
    refused = 0
    for variant in variants(sample_request(1, version)):
        if variant.body is None:
            continue
        frame = encode_header(sample_request(1, version), 41) + variant.body
        assert variant.label.endswith("(not nullable)")  # Fetch has no nullable array or string but tags
        path = variant.label.split("=")[0]
        try:
            assert null_in_non_nullable(kio_read(frame, version)[1]) == path
        except UnexpectedNull:
            assert path in ("topics.topic", "forgotten_topics_data.topic", "rack_id")
        refused += 1
        with pytest.raises(RefusedRequest) as info:
            decode_request(frame, everything)
        assert info.value.message == f"non-nullable field {path} was serialized as null"
        assert (info.value.code, info.value.header.correlation_id) == (ErrorCode.invalid_request, 41)
        assert info.value.header.api_key == 1 and info.value.header.api_version == version
    topic_names = 2 if 7 <= version < 13 else 1 if version < 7 else 0
    assert refused == 2 + topic_names + (2 if version >= 7 else 0) + (version >= 11)


def two_topics(first: bytes, second: bytes) -> bytes:
    """A v4 request of two topics: `first` and `second` are each a name and a partition array."""
    return struct.pack(">hhih", 1, 4, 1, -1) + struct.pack(">iiiibi", -1, 0, 1, 1000, 0, 2) + first + second


@pytest.mark.parametrize(("first", "second", "path"), [
    (NAMED + NULL_PARTITIONS, NULL_NAME + NO_PARTITIONS, "topics.partitions"),
    (NULL_NAME + NO_PARTITIONS, NAMED + NULL_PARTITIONS, "topics.topic")])
def test_the_first_null_in_field_order_is_the_one_named(first: bytes, second: bytes, path: str) -> None:
    with pytest.raises(NullFieldError) as info:
        read_fetch_request(two_topics(first, second), 4)
    assert info.value.message == f"non-nullable field {path} was serialized as null"
