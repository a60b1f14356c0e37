"""Produce and Fetch responses written straight from the handlers' plain values, without kio.

These two answer almost every request a busy broker gets, and going through build() and kio's
writer (which re-validates every field through its phantom types) cost a 16 KiB Produce request
about 40 us of its ~330 us of broker CPU, and copied a Fetch response's record bytes twice. The
layouts are Kafka's ProduceResponse (v3-13) and FetchResponse (v4-18) JSON specs; a test checks
every version byte for byte against kio's encoder. Only the fields the handlers set are written:
of the tagged fields, Fetch's current_leader and node_endpoints (v16+, KIP-951), never
diverging_epoch or snapshot_id (no followers). A Fetch response is a list of buffers that the
connection writes with one writelines, so the stored record bytes are never copied into it.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Final, NotRequired, TypedDict

from .errors import ErrorCode

__all__ = ("AbortedTransaction", "Buffers", "FetchPartitionResponse", "FetchTopicResponse", "NodeEndpoint",
           "ProducePartitionResponse", "ProduceTopicResponse", "RecordError", "count_prefix", "encode_fetch_response",
           "encode_produce_response", "framed", "string")

# A framed response as buffers for one writelines: a Fetch's record bytes go out as stored.
Buffers = list[bytes | memoryview]


# The handlers' plain values, typed so that mypy refuses a misspelt key at no cost per request
# (a TypedDict is a dict at run time); Kafka's field names.
class RecordError(TypedDict):
    batch_index: int
    batch_index_error_message: str | None


class ProducePartitionResponse(TypedDict):
    index: int
    error_code: ErrorCode
    base_offset: int
    log_append_time: int
    log_start_offset: int
    # left out by a success, the hot path: one dict of five keys per partition
    error_message: NotRequired[str | None]
    record_errors: NotRequired[Sequence[RecordError]]
    current_leader: NotRequired[tuple[int, int]]  # (leader_id, leader_epoch), v10+ (KIP-951)


class ProduceTopicResponse(TypedDict):
    name: str | None
    topic_id: uuid.UUID | None
    partition_responses: Sequence[ProducePartitionResponse]


class NodeEndpoint(TypedDict):
    node_id: int
    host: str
    port: int
    rack: str | None


class AbortedTransaction(TypedDict):
    producer_id: int
    first_offset: int


class FetchPartitionResponse(TypedDict):
    partition_index: int
    error_code: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: Sequence[AbortedTransaction] | None  # None: read_uncommitted
    preferred_read_replica: int
    records: bytes | memoryview | Sequence[bytes | memoryview]
    current_leader: NotRequired[tuple[int, int]]  # v16+ (KIP-951)


class FetchTopicResponse(TypedDict):
    topic: str | None
    topic_id: uuid.UUID | None
    partitions: list[FetchPartitionResponse]

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_HEAD_V0: Final = struct.Struct(">ii")  # size, correlation id
# Produce partition: index, error_code, base_offset, log_append_time (v2+).
_PRODUCE_PART: Final = struct.Struct(">ihqq")
_I64: Final = struct.Struct(">q")
# Fetch partition: partition_index, error_code, high_watermark, last_stable_offset, and from v5
# log_start_offset (one pack per partition: a fetch of a thousand partitions writes them all).
_FETCH_PART: Final = struct.Struct(">ihqq")
_FETCH_PART_V5: Final = struct.Struct(">ihqqq")
_ABORTED: Final = struct.Struct(">qq")
# A partition's tagged fields holding only current_leader (Fetch's tag 1, Produce's tag 0): one
# field, its tag, 9 bytes of leader_id, leader_epoch and the nested struct's empty tagged fields.
_CURRENT_LEADER: Final = struct.Struct(">bbbiib")
_LEADER_DISCOVERY: Final = 16  # KIP-951: current_leader and node_endpoints (Fetch)
_PRODUCE_LEADER_DISCOVERY: Final = 10  # the same in Produce
_NO_TAGS: Final = b"\x00"
_NO_UUID: Final = bytes(16)
_PRODUCE_FLEXIBLE: Final = 9
_FETCH_FLEXIBLE: Final = 12
# Parts at least this long (record bytes) stay buffers of their own; shorter ones are joined, as a
# buffer per field would cost the transport more than the copy.
_PASS_THROUGH: Final = 4096


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def count_prefix(n: int | None, flexible: bool) -> bytes:
    """An array's (or a nullable array's) length prefix."""
    if flexible:
        return _uvarint(0 if n is None else n + 1)
    return _I32.pack(-1 if n is None else n)


# Null and empty array prefixes, by flexible (False, True).
_NO_ARRAY: Final = (count_prefix(None, False), count_prefix(None, True))
_EMPTY_ARRAY: Final = (count_prefix(0, False), count_prefix(0, True))


def string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return b"\x00" if flexible else _I16.pack(-1)
    data = s.encode()
    return (_uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def framed(correlation_id: int, flexible_header: bool, parts: Sequence[bytes | memoryview]) -> bytes:
    body = b"".join(parts)
    header = _NO_TAGS if flexible_header else b""
    return _HEAD_V0.pack(4 + len(header) + len(body), correlation_id) + header + body


def encode_produce_response(correlation_id: int, version: int, responses: Sequence[ProduceTopicResponse],
                            throttle_ms: int = 0, node_endpoints: Sequence[NodeEndpoint] = ()) -> bytes:
    """The framed response; responses as the Produce handler builds them (name or topic_id, and
    partition_responses of index, error_code, base_offset, log_append_time, log_start_offset,
    record_errors, error_message, and from v10 an optional current_leader (leader_id,
    leader_epoch)); node_endpoints (v10+) are the addresses of those leaders (KIP-951)."""
    flexible = version >= _PRODUCE_FLEXIBLE
    parts: list[bytes | memoryview] = [count_prefix(len(responses), flexible)]
    for topic in responses:
        if version >= 13:
            topic_id = topic["topic_id"]  # None (a request that named none) goes as the zero UUID
            parts.append(_NO_UUID if topic_id is None else topic_id.bytes)
        else:
            parts.append(string(topic["name"], flexible))
        partitions = topic["partition_responses"]
        parts.append(count_prefix(len(partitions), flexible))
        for p in partitions:
            parts.append(_PRODUCE_PART.pack(p["index"], p["error_code"], p["base_offset"], p["log_append_time"]))
            if version >= 5:
                parts.append(_I64.pack(p["log_start_offset"]))
            if version >= 8:
                _record_errors(parts, p.get("record_errors", ()), flexible)
                parts.append(string(p.get("error_message"), flexible))
            if version >= _PRODUCE_LEADER_DISCOVERY and (leader := p.get("current_leader")) is not None:
                parts.append(_CURRENT_LEADER.pack(1, 0, 9, leader[0], leader[1], 0))  # tag 0 here
            elif flexible:
                parts.append(_NO_TAGS)
        if flexible:
            parts.append(_NO_TAGS)
    parts.append(_I32.pack(throttle_ms))
    if version >= _PRODUCE_LEADER_DISCOVERY and node_endpoints:
        _node_endpoints(parts, node_endpoints)
    elif flexible:
        parts.append(_NO_TAGS)
    return framed(correlation_id, flexible, parts)


def _record_errors(parts: list[bytes | memoryview], errors: Sequence[RecordError], flexible: bool) -> None:
    """KIP-467: the records of a refused batch that failed, by index (empty unless a batch failed)."""
    parts.append(count_prefix(len(errors), flexible))
    for e in errors:
        parts += (_I32.pack(e["batch_index"]), string(e["batch_index_error_message"], flexible))
        if flexible:
            parts.append(_NO_TAGS)


def encode_fetch_response(correlation_id: int, version: int, error_code: int, session_id: int,
                          responses: Sequence[FetchTopicResponse], throttle_ms: int = 0,
                          node_endpoints: Sequence[NodeEndpoint] = ()) -> Buffers:
    """The framed response as buffers (their join is the frame); responses as the Fetch handler
    builds them (topic, or from v13 topic_id (None: the zero UUID), and partitions of
    partition_index, error_code, high_watermark, last_stable_offset, log_start_offset,
    aborted_transactions (None or producer_id/first_offset dicts), records: bytes or a list of
    buffers, and from v16 an optional current_leader (leader_id, leader_epoch)); node_endpoints
    (v16+) as node_id, host, port, rack. Record bytes are not copied: they are buffers of the result."""
    flexible = version >= _FETCH_FLEXIBLE
    parts: list[bytes | memoryview] = [_I32.pack(throttle_ms)]
    if version >= 7:
        parts += (_I16.pack(error_code), _I32.pack(session_id))
    parts.append(count_prefix(len(responses), flexible))
    for topic in responses:
        if version >= 13:
            topic_id = topic["topic_id"]
            parts.append(_NO_UUID if topic_id is None else topic_id.bytes)
        else:
            parts.append(string(topic["topic"], flexible))
        partitions = topic["partitions"]
        parts.append(count_prefix(len(partitions), flexible))
        for p in partitions:
            _fetch_partition(parts, p, version, flexible)
        if flexible:
            parts.append(_NO_TAGS)
    if version >= _LEADER_DISCOVERY and node_endpoints:
        _node_endpoints(parts, node_endpoints)
    elif flexible:
        parts.append(_NO_TAGS)
    return _framed_buffers(correlation_id, flexible, parts)


def _node_endpoints(parts: list[bytes | memoryview], nodes: Sequence[NodeEndpoint]) -> None:
    """The response's tagged fields holding node_endpoints (tag 0): the leaders named by
    current_leader, so that a client reaches them without a Metadata round trip (KIP-951)."""
    field = [count_prefix(len(nodes), True)]
    for node in nodes:
        field += (_I32.pack(node["node_id"]), string(node["host"], True), _I32.pack(node["port"]),
                  string(node["rack"], True), _NO_TAGS)
    data = b"".join(field)
    parts += (_uvarint(1), _uvarint(0), _uvarint(len(data)), data)


def _framed_buffers(correlation_id: int, flexible_header: bool, parts: list[bytes | memoryview]) -> Buffers:
    """Size and header first, then parts: short runs joined, long parts (records) passed through."""
    header = _NO_TAGS if flexible_header else b""
    head = _HEAD_V0.pack(4 + len(header) + sum(map(len, parts)), correlation_id)
    if max(map(len, parts)) < _PASS_THROUGH:  # no record bytes worth passing through (an empty fetch)
        return [head + header + b"".join(parts)]
    run: list[bytes | memoryview] = [head, header]
    out: Buffers = []
    for part in parts:
        if len(part) < _PASS_THROUGH:
            run.append(part)
            continue
        out += (b"".join(run), part)
        run = []
    if run:
        out.append(b"".join(run))
    return out


def _fetch_partition(parts: list[bytes | memoryview], p: FetchPartitionResponse, version: int, flexible: bool) -> None:
    if version >= 5:
        parts.append(_FETCH_PART_V5.pack(p["partition_index"], p["error_code"], p["high_watermark"],
                                         p["last_stable_offset"], p["log_start_offset"]))
    else:
        parts.append(_FETCH_PART.pack(p["partition_index"], p["error_code"], p["high_watermark"],
                                      p["last_stable_offset"]))
    aborted = p["aborted_transactions"]
    if not aborted:  # None (read_uncommitted) or none aborted: a constant
        parts.append(_NO_ARRAY[flexible] if aborted is None else _EMPTY_ARRAY[flexible])
    else:
        parts.append(count_prefix(len(aborted), flexible))
        for a in aborted:
            parts.append(_ABORTED.pack(a["producer_id"], a["first_offset"]))
            if flexible:
                parts.append(_NO_TAGS)
    if version >= 11:
        parts.append(_I32.pack(p["preferred_read_replica"]))
    records = p["records"]
    if isinstance(records, bytes | memoryview):
        records = (records,)
    size = sum(map(len, records))
    parts.append(_uvarint(size + 1) if flexible else _I32.pack(size))
    parts += records
    if version >= _LEADER_DISCOVERY and (leader := p.get("current_leader")) is not None:
        parts.append(_CURRENT_LEADER.pack(1, 1, 9, leader[0], leader[1], 0))
    elif flexible:
        parts.append(_NO_TAGS)
