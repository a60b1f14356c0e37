"""Fetch requests (v4-18) read by hand, without kio: the request every consumer sends in a loop.

kio's generic path read a one-partition Fetch in ~2-2.5 us: protocol/bounds.py's walk (~0.75),
kio's header and body readers (~0.8, ~1.3 from v13, which builds a UUID per topic id) and
dispatch's null check (~0.45). This reader does all three in one pass (~1.9 us), as
produce_request.py does for Produce: every length and count is checked against the bytes that
remain before anything is sliced or looped over (protocol/readable.py), and a null where Kafka's
schema forbids one is refused with the path dispatch's check gives. Its tuples also spare the
handler kio's timedelta and the getattr defaults older versions' entities needed.

Layouts are Kafka's RequestHeader.json (v1 up to Fetch v11; v2, with tagged fields, from v12:
client_id keeps its INT16 length there) and FetchRequest.json: session_id, session_epoch and
forgotten_topics_data from v7, current_leader_epoch v9, rack_id v11, flexible from v12 (compact
strings and arrays, a tag buffer after each struct) with last_fetched_epoch and the tagged
cluster_id, topics by TopicId from v13, replica_id moved into the tagged replica_state from v15,
and a partition's tagged replica_directory_id (v17) and high_watermark (v18). Unknown tags are
skipped, as Kafka skips them; bytes after the body are ignored, as kio's reader ignores them.
Fields a version lacks hold Kafka's defaults, so the handler reads one shape for every version.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from typing import Final, NamedTuple

from .readable import (
    UUID_SIZE,
    NullFieldError,
    Overrun,
    ValueReader,
    compact_count,
    compact_string,
    int32_count,
    read_tags,
    read_uuid,
    refused,
    skip_tags,
    string,
)

__all__ = ("VERSIONS", "FetchPartition", "FetchRequest", "FetchTopic", "ForgottenTopic", "ReplicaState",
           "read_fetch_request")

VERSIONS: Final = range(4, 19)
_SESSIONS: Final = 7  # session_id, session_epoch, forgotten_topics_data
_RACK: Final = 11
_FLEXIBLE: Final = 12
_TOPIC_IDS: Final = 13
_REPLICA_STATE: Final = 15
_HEADER: Final = 8  # api_key, api_version, correlation_id: read by codec.peek_header
_NO_HIGH_WATERMARK: Final = (1 << 63) - 1  # Kafka's default: "the feature is not supported"
_new_tuple = tuple.__new__  # a NamedTuple's own __new__ is a Python call per item


class FetchPartition(NamedTuple):
    partition: int
    current_leader_epoch: int  # v9+; -1 before
    fetch_offset: int
    last_fetched_epoch: int  # v12+; -1 before
    log_start_offset: int  # v5+; -1 before (a follower's)
    partition_max_bytes: int
    replica_directory_id: uuid.UUID | None  # tagged, v17+ (a follower's)
    high_watermark: int  # tagged, v18+ (a follower's)


class FetchTopic(NamedTuple):
    topic: str | None  # v4-12
    topic_id: uuid.UUID | None  # v13+; the zero UUID reads as None, as kio reads it
    partitions: list[FetchPartition]


class ForgottenTopic(NamedTuple):
    topic: str | None  # v7-12
    topic_id: uuid.UUID | None  # v13+
    partitions: tuple[int, ...]


class ReplicaState(NamedTuple):
    replica_id: int
    replica_epoch: int


class FetchRequest(NamedTuple):
    replica_id: int  # v4-14, and replica_state's from v15: -1 for a consumer
    max_wait_ms: int  # Kafka's MaxWaitMs (kio's `max_wait`, a timedelta)
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int  # v7+; 0 before
    session_epoch: int  # v7+; -1 (no session) before
    topics: list[FetchTopic]
    forgotten_topics_data: list[ForgottenTopic]  # v7+; empty before
    rack_id: str  # v11+; "" before
    cluster_id: str | None  # tagged, v12+
    replica_state: ReplicaState | None  # tagged, v15+ (as kio, -1s when absent); None before


_NO_REPLICA_STATE: Final = ReplicaState(-1, -1)


def read_fetch_request(frame: bytes | memoryview, version: int) -> tuple[str | None, FetchRequest]:
    """(client_id, body) of a whole Fetch request frame of `version` (in VERSIONS)."""
    try:
        return _read_flexible(frame, version) if version >= _FLEXIBLE else _read_legacy(frame, version)
    except (Overrun, struct.error, IndexError, UnicodeDecodeError) as exc:
        raise refused(1, version, exc) from None


# -- v4-11 (header v1): INT16-length strings, INT32 counts, -1 for null -----------------------------

_LEGACY_HEAD: Final = struct.Struct(">iiiib")  # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level
_LEGACY_HEAD_V7: Final = struct.Struct(">iiiibii")  # and session_id, session_epoch
# A partition: partition, [current_leader_epoch v9+], fetch_offset, [log_start_offset v5+],
# partition_max_bytes. Fixed-size, so a count is checked exactly and the items unpacked in one pass.
_LEGACY_PARTITION: Final = {4: struct.Struct(">iqi"), 5: struct.Struct(">iqqi"), 9: struct.Struct(">iiqqi")}
_LEGACY_TOPIC: Final = 2 + 4  # an empty name, an empty partition array


def _read_legacy(buf: bytes | memoryview, version: int) -> tuple[str | None, FetchRequest]:
    end = len(buf)
    client_id, pos = string(buf, _HEADER, end)
    head = _LEGACY_HEAD_V7 if version >= _SESSIONS else _LEGACY_HEAD
    fields = head.unpack_from(buf, pos)
    pos += head.size
    count, pos = int32_count(buf, pos, end, _LEGACY_TOPIC, "topics")
    topics = []
    for _ in range(count):
        name, pos = _legacy_name(buf, pos, end, "topics.topic")
        partitions, pos = _legacy_partitions(buf, pos, end, version)
        topics.append(_new_tuple(FetchTopic, (name, None, partitions)))
    forgotten: list[ForgottenTopic] = []
    if version >= _SESSIONS:
        forgotten, pos = _legacy_forgotten(buf, pos, end)
    rack_id = ""
    if version >= _RACK:
        rack_id, pos = _legacy_name(buf, pos, end, "rack_id")
    if version < _SESSIONS:
        fields += (0, -1)
    return client_id, _new_tuple(FetchRequest, (*fields, topics, forgotten, rack_id, None, None))


def _legacy_name(buf: bytes | memoryview, pos: int, end: int, path: str) -> tuple[str, int]:
    name, pos = string(buf, pos, end)
    if name is None:
        raise NullFieldError(path)
    return name, pos


def _legacy_partitions(buf: bytes | memoryview, pos: int, end: int,
                       version: int) -> tuple[list[FetchPartition], int]:
    layout = _LEGACY_PARTITION[9 if version >= 9 else 5 if version >= 5 else 4]
    count, pos = int32_count(buf, pos, end, layout.size, "topics.partitions")
    after = pos + count * layout.size
    items = layout.iter_unpack(buf[pos:after])
    hw = _NO_HIGH_WATERMARK
    if version >= 9:
        return [_new_tuple(FetchPartition, (p, e, o, -1, s, m, None, hw)) for p, e, o, s, m in items], after
    if version >= 5:
        return [_new_tuple(FetchPartition, (p, -1, o, -1, s, m, None, hw)) for p, o, s, m in items], after
    return [_new_tuple(FetchPartition, (p, -1, o, -1, -1, m, None, hw)) for p, o, m in items], after


def _legacy_forgotten(buf: bytes | memoryview, pos: int, end: int) -> tuple[list[ForgottenTopic], int]:
    count, pos = int32_count(buf, pos, end, _LEGACY_TOPIC, "forgotten_topics_data")
    forgotten = []
    for _ in range(count):
        name, pos = _legacy_name(buf, pos, end, "forgotten_topics_data.topic")
        size, pos = int32_count(buf, pos, end, 4, "forgotten_topics_data.partitions")
        forgotten.append(_new_tuple(ForgottenTopic, (name, None, _int32s(buf, pos, size))))
        pos += 4 * size
    return forgotten, pos


def _int32s(buf: bytes | memoryview, pos: int, count: int) -> tuple[int, ...]:
    """`count` INT32s (forgotten partitions), already checked to fit."""
    return struct.unpack_from(f">{count}i", buf, pos) if count else ()


# -- v12-18 (header v2): compact lengths and counts (length + 1, 0 for null), tag buffers -----------

_FLEXIBLE_HEAD: Final = struct.Struct(">iiiibii")  # as v7-11's
_FLEXIBLE_HEAD_V15: Final = struct.Struct(">iiibii")  # replica_id gone into replica_state
# partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, partition_max_bytes
# and the first byte of its tag buffer (0: no tags, nearly always), read in the same unpack
_FLEXIBLE_PARTITION: Final = struct.Struct(">iiqiqiB")
_COMPACT_PARTITION: Final = _FLEXIBLE_PARTITION.size  # with no tags
_PARTITION_SIZE: Final = _COMPACT_PARTITION - 1
_COMPACT_TOPIC: Final = 1 + 1 + 1  # an empty name, an empty partition array, no tags
_COMPACT_TOPIC_BY_ID: Final = UUID_SIZE + 1 + 1  # v13+: a TopicId in place of the name
_REPLICA_STATE_FIELDS: Final = struct.Struct(">iq")
_I64: Final = struct.Struct(">q")


def _read_flexible(buf: bytes | memoryview, version: int) -> tuple[str | None, FetchRequest]:
    end = len(buf)
    client_id, pos = string(buf, _HEADER, end)
    pos = skip_tags(buf, pos, end) if buf[pos] else pos + 1
    has_state = version >= _REPLICA_STATE
    head = _FLEXIBLE_HEAD_V15 if has_state else _FLEXIBLE_HEAD
    fields = head.unpack_from(buf, pos)
    topics, pos = _compact_topics(buf, pos + head.size, end, version)
    # The usual ends inline: no forgotten topics, rack_id "", no tags.
    forgotten, pos = ([], pos + 1) if buf[pos] == 1 else _compact_forgotten(buf, pos, end, version >= _TOPIC_IDS)
    rack_id, pos = ("", pos + 1) if buf[pos] == 1 else compact_string(buf, pos, end)
    if rack_id is None:
        raise NullFieldError("rack_id")
    cluster_id, state = None, _NO_REPLICA_STATE if has_state else None
    if buf[pos]:
        tags, pos = read_tags(buf, pos, end, _BODY_TAGS if has_state else _BODY_TAGS_V12)
        cluster_id, state = tags.get(0), tags.get(1, state)
    if state is not None:  # v15+: replica_id is replica_state's
        fields = (state.replica_id, *fields)
    return client_id, _new_tuple(FetchRequest, (*fields, topics, forgotten, rack_id, cluster_id, state))


# The topics loop is written out, partitions and all, rather than composed from a reader per
# partition: a Python call costs about as much as the partition it would read.


def _compact_topics(buf: bytes | memoryview, pos: int, end: int, version: int) -> tuple[list[FetchTopic], int]:
    by_id = version >= _TOPIC_IDS
    count, pos = compact_count(buf, pos, end, _COMPACT_TOPIC_BY_ID if by_id else _COMPACT_TOPIC, "topics")
    unpack = _FLEXIBLE_PARTITION.unpack_from
    topics = []
    for _ in range(count):
        name, topic_id, pos = _compact_topic(buf, pos, end, by_id, "topics.topic")
        size, pos = compact_count(buf, pos, end, _COMPACT_PARTITION, "topics.partitions")
        partitions = []
        for _ in range(size):
            p, e, o, f, s, m, tagged = unpack(buf, pos)
            if tagged:  # a follower's tags (v17+), or ones this broker does not know
                tags, pos = read_tags(buf, pos + _PARTITION_SIZE, end, _PARTITION_TAGS.get(version, _NONE_KNOWN))
                partitions.append(_new_tuple(FetchPartition, (p, e, o, f, s, m, tags.get(0),
                                                              tags.get(1, _NO_HIGH_WATERMARK))))
                continue
            pos += _COMPACT_PARTITION
            partitions.append(_new_tuple(FetchPartition, (p, e, o, f, s, m, None, _NO_HIGH_WATERMARK)))
        topics.append(_new_tuple(FetchTopic, (name, topic_id, partitions)))
        pos = skip_tags(buf, pos, end) if buf[pos] else pos + 1
    return topics, pos


def _compact_topic(buf: bytes | memoryview, pos: int, end: int, by_id: bool,
                   path: str) -> tuple[str | None, uuid.UUID | None, int]:
    """A topic's (name, id, position after): a TopicId from v13, a compact name before."""
    if by_id:
        topic_id, pos = read_uuid(buf, pos, end)
        return None, topic_id, pos
    name, pos = compact_string(buf, pos, end)
    if name is None:
        raise NullFieldError(path)
    return name, None, pos


def _compact_forgotten(buf: bytes | memoryview, pos: int, end: int,
                       by_id: bool) -> tuple[list[ForgottenTopic], int]:
    least = _COMPACT_TOPIC_BY_ID if by_id else _COMPACT_TOPIC
    count, pos = compact_count(buf, pos, end, least, "forgotten_topics_data")
    forgotten = []
    for _ in range(count):
        name, topic_id, pos = _compact_topic(buf, pos, end, by_id, "forgotten_topics_data.topic")
        size, pos = compact_count(buf, pos, end, 4, "forgotten_topics_data.partitions")
        forgotten.append(_new_tuple(ForgottenTopic, (name, topic_id, _int32s(buf, pos, size))))
        pos += 4 * size
        pos = skip_tags(buf, pos, end) if buf[pos] else pos + 1
    return forgotten, pos


# -- known tagged fields: each read within the bytes its tag announced ----------------------------


def _fixed(layout: struct.Struct, buf: bytes | memoryview, pos: int, stop: int) -> tuple[int, ...]:
    if pos + layout.size > stop:
        raise Overrun(f"{layout.size} bytes at byte {pos} reach past their tagged field's end at {stop}")
    return layout.unpack_from(buf, pos)


def _replica_state(buf: bytes | memoryview, pos: int, stop: int) -> tuple[ReplicaState, int]:
    state = _new_tuple(ReplicaState, _fixed(_REPLICA_STATE_FIELDS, buf, pos, stop))
    pos += _REPLICA_STATE_FIELDS.size
    return state, skip_tags(buf, pos, stop) if buf[pos] else pos + 1


def _high_watermark(buf: bytes | memoryview, pos: int, stop: int) -> tuple[int, int]:
    return _fixed(_I64, buf, pos, stop)[0], pos + 8


_NONE_KNOWN: Final[Mapping[int, ValueReader]] = {}
_BODY_TAGS_V12: Final[Mapping[int, ValueReader]] = {0: compact_string}  # cluster_id
_BODY_TAGS: Final[Mapping[int, ValueReader]] = {0: compact_string, 1: _replica_state}
_PARTITION_TAGS: Final[Mapping[int, Mapping[int, ValueReader]]] = {
    17: {0: read_uuid},  # replica_directory_id
    18: {0: read_uuid, 1: _high_watermark},
}
