"""protocol/fast_responses.py writes exactly what kio's encoder writes, in every version."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from broker.handlers.metadata import HANDLER as METADATA
from broker.handlers.offset_commit import HANDLER as OFFSET_COMMIT
from protocol.build import build
from protocol.codec import decode_response, encode_response, response_schema
from protocol.errors import ErrorCode
from protocol.fast_responses import encode_fetch_response, encode_produce_response
from protocol.metadata_response import encode_metadata_response
from protocol.offset_commit_response import encode_offset_commit_response

NAMES = ["t", "orders", "ünïcode-topic", "x" * 200]


def _produce_topics(rng: random.Random, version: int) -> list[dict[str, Any]]:
    topics = []
    for _ in range(rng.choice([0, 1, 1, 3])):
        parts = []
        for index in rng.sample(range(1000), rng.choice([1, 1, 2, 5])):
            failed = rng.random() < 0.3
            part = {"index": index, "error_code": ErrorCode.not_leader_or_follower if failed else ErrorCode.none,
                    "base_offset": -1 if failed else rng.randrange(1 << 40),
                    "log_append_time": rng.choice([-1, 1_700_000_000_000 + rng.randrange(10**9)]),
                    "log_start_offset": rng.randrange(1 << 40)}
            if failed or rng.random() < 0.5:
                part["error_message"] = rng.choice([None, "", "it failed: é"])
            if failed and version >= 10 and rng.random() < 0.5:  # KIP-951
                part["current_leader"] = {"leader_id": rng.choice([-1, 2, 1 << 20]),
                                          "leader_epoch": rng.randrange(-1, 99)}
            if failed and rng.random() < 0.5:
                part["record_errors"] = [{"batch_index": i, "batch_index_error_message": rng.choice([None, "no key"])}
                                         for i in rng.sample(range(100), rng.choice([1, 3]))]
            parts.append(part)
        topics.append({"name": rng.choice(NAMES), "topic_id": rng.choice([None, uuid.UUID(int=rng.getrandbits(128))]),
                       "partition_responses": parts})
    return topics


def _fetch_topics(rng: random.Random, version: int = 12) -> list[dict[str, Any]]:
    topics = []
    for _ in range(rng.choice([0, 1, 1, 3])):
        parts = []
        for index in rng.sample(range(1000), rng.choice([1, 1, 2, 12])):
            aborted = rng.choice([None, [], [
                {"producer_id": rng.randrange(1 << 40), "first_offset": rng.randrange(1 << 40)}
                for _ in range(rng.choice([1, 3]))]])
            part = {
                "partition_index": index, "error_code": rng.choice([ErrorCode.none, ErrorCode.offset_out_of_range]),
                "high_watermark": rng.randrange(-1, 1 << 40), "last_stable_offset": rng.randrange(-1, 1 << 40),
                "log_start_offset": rng.randrange(-1, 1 << 40), "aborted_transactions": aborted,
                "preferred_read_replica": -1, "records": rng.randbytes(rng.choice([0, 1, 127, 128, 3_000, 5_000]))}
            if version >= 16 and rng.random() < 0.3:  # KIP-951: the leader of a NOT_LEADER_OR_FOLLOWER partition
                part["error_code"] = ErrorCode.not_leader_or_follower
                part["current_leader"] = {"leader_id": rng.choice([-1, 2, 1 << 20]),
                                          "leader_epoch": rng.randrange(-1, 99)}
            parts.append(part)
        topics.append({"topic": rng.choice(NAMES), "partitions": parts,
                       "topic_id": rng.choice([None, uuid.UUID(int=rng.getrandbits(128))])})
    return topics


def _as_handler_builds(topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same topics with current_leader as the handler gives it: (leader_id, leader_epoch)."""
    return [{**t, "partitions": [{**p, "current_leader": (p["current_leader"]["leader_id"],
                                                          p["current_leader"]["leader_epoch"])}
                                 if "current_leader" in p else p for p in t["partitions"]]} for t in topics]


def _node_endpoints(rng: random.Random) -> list[dict[str, Any]]:
    return [{"node_id": n, "host": rng.choice(["127.0.0.1", "broker-é.example"]), "port": rng.randrange(65536),
             "rack": rng.choice([None, "rack-a"])} for n in rng.sample(range(100), rng.choice([0, 0, 1, 3]))]


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_response_matches_kio(version: int) -> None:
    """Every version; from v10 a partition's tagged current_leader and the response's
    node_endpoints (KIP-951) when there are any."""
    rng = random.Random(version)
    for _ in range(30):
        topics = _produce_topics(rng, version)
        throttle = rng.choice([0, 5000])
        nodes = _node_endpoints(rng) if version >= 10 else []
        correlation_id = rng.randrange(-(1 << 31), 1 << 31)
        fields: dict[str, Any] = {"responses": topics, "throttle_time": throttle}
        if nodes:
            fields["node_endpoints"] = nodes
        expected = encode_response(correlation_id, build(response_schema(0, version), fields))
        as_built = [{**t, "partition_responses": [
            {**p, "current_leader": (p["current_leader"]["leader_id"], p["current_leader"]["leader_epoch"])}
            if "current_leader" in p else p for p in t["partition_responses"]]} for t in topics]
        assert encode_produce_response(correlation_id, version, as_built, throttle, nodes) == expected


@pytest.mark.parametrize("version", range(4, 19))
def test_fetch_response_matches_kio(version: int) -> None:
    """Every version: names to v12, topic ids from v13, and from v16 the tagged current_leader of
    a partition and the response's node_endpoints (KIP-951) when there are any."""
    rng = random.Random(100 + version)
    for _ in range(30):
        topics = _fetch_topics(rng, version)
        nodes = _node_endpoints(rng) if version >= 16 else []
        error, session = rng.choice([(ErrorCode.none, 0), (ErrorCode.fetch_session_id_not_found, 0)])
        correlation_id = rng.randrange(-(1 << 31), 1 << 31)
        fields = {"throttle_time": 0, "error_code": error, "session_id": session, "responses": topics}
        if version >= 16:
            fields["node_endpoints"] = nodes
        expected = encode_response(correlation_id, build(response_schema(1, version), fields))
        encoded = encode_fetch_response(correlation_id, version, error, session, _as_handler_builds(topics),
                                        node_endpoints=nodes)
        assert b"".join(encoded) == expected


def test_fetch_response_v16_decodes_its_leader_and_endpoints() -> None:
    """What a Kafka 4 client reads back: the topic's id, the partition's current_leader, the node."""
    topic_id = uuid.uuid4()
    topics = [{"topic": "t", "topic_id": topic_id, "partitions": [
        {"partition_index": 2, "error_code": ErrorCode.not_leader_or_follower, "high_watermark": -1,
         "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
         "preferred_read_replica": -1, "records": b"", "current_leader": (3, 7)}]}]
    nodes = [{"node_id": 3, "host": "h3", "port": 9094, "rack": None}]
    for version in (16, 17, 18):
        _, body = decode_response(b"".join(encode_fetch_response(5, version, ErrorCode.none, 0, topics,
                                                                 node_endpoints=nodes))[4:], 1, version)
        (part,) = body.responses[0].partitions
        assert body.responses[0].topic_id == topic_id
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (3, 7)
        assert [(n.node_id, n.host, n.port, n.rack) for n in body.node_endpoints] == [(3, "h3", 9094, None)]
    # Before v16 neither is written (Kafka sets them from v16 only).
    _, body = decode_response(b"".join(encode_fetch_response(5, 15, ErrorCode.none, 0, topics,
                                                             node_endpoints=nodes))[4:], 1, 15)
    assert body.responses[0].partitions[0].current_leader.leader_id == -1


def test_fetch_response_decodes_with_its_records() -> None:
    records = bytes(range(256)) * 10
    topics = [{"topic": "t", "partitions": [{"partition_index": 3, "error_code": ErrorCode.none, "high_watermark": 9,
                                             "last_stable_offset": 8, "log_start_offset": 0,
                                             "aborted_transactions": [{"producer_id": 7, "first_offset": 2}],
                                             "preferred_read_replica": -1, "records": records}]}]
    frame = b"".join(encode_fetch_response(42, 12, ErrorCode.none, 0, topics))
    correlation_id, body = decode_response(frame[4:], 1, 12)
    assert correlation_id == 42
    (part,) = body.responses[0].partitions
    assert (part.partition_index, part.last_stable_offset, part.records) == (3, 8, records)
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(7, 2)]


def test_fetch_response_passes_record_buffers_through_uncopied() -> None:
    """Records of 4 KiB or more are buffers of the result themselves (one writelines sends them);
    a partition's list of buffers is written as its one records field."""
    big, view = bytes(5_000), memoryview(bytes(range(256)) * 40)[10:]
    topics = [{"topic": "t", "partitions": [
        {"partition_index": i, "error_code": ErrorCode.none, "high_watermark": 9, "last_stable_offset": 9,
         "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1, "records": records}
        for i, records in enumerate([big, [view, b"tail"], b""])]}]
    for version in (4, 11, 12):
        buffers = encode_fetch_response(7, version, ErrorCode.none, 0, topics)
        assert any(b is big for b in buffers) and any(b is view for b in buffers)
        _, body = decode_response(b"".join(buffers)[4:], 1, version)
        assert [p.records for p in body.responses[0].partitions] == [big, bytes(view) + b"tail", b""]


def _metadata_topics(rng: random.Random, version: int) -> list[dict[str, Any]]:
    topics: list[dict[str, Any]] = []
    for _ in range(rng.choice([0, 1, 1, 3])):
        if rng.random() < 0.3:  # error_entry's shape: no partitions, no is_internal
            topics.append({"error_code": ErrorCode.unknown_topic_or_partition, "partitions": [],
                           "name": None if version >= 12 and rng.random() < 0.5 else rng.choice(NAMES),
                           "topic_id": rng.choice([None, uuid.UUID(int=rng.getrandbits(128))])})
            continue
        parts = []
        for index in rng.sample(range(1000), rng.choice([0, 1, 2, 30])):
            replicas = rng.choice([[], [1], [3, 1, 2]])
            parts.append({"error_code": rng.choice([ErrorCode.none, ErrorCode.leader_not_available]),
                          "partition_index": index, "leader_id": rng.choice([-1, 1, 7]),
                          "leader_epoch": rng.choice([-1, 0, 12]), "replica_nodes": replicas,
                          "isr_nodes": rng.choice([replicas, replicas[:1]]), "offline_replicas": rng.choice([[], [9]])})
        topic = {"error_code": ErrorCode.none, "name": rng.choice(NAMES), "partitions": parts,
                 "topic_id": uuid.UUID(int=rng.getrandbits(128)), "is_internal": rng.random() < 0.2}
        if rng.random() < 0.5:
            topic["topic_authorized_operations"] = rng.choice([-2147483648, 0b1011_1000])
        topics.append(topic)
    return topics


@pytest.mark.parametrize("version", range(METADATA.max_version + 1))
def test_metadata_response_matches_kio(version: int) -> None:
    rng = random.Random(200 + version)
    for _ in range(40):
        brokers = [{"node_id": n, "host": rng.choice(["127.0.0.1", "broker-é.example"]), "port": rng.randrange(65536),
                    "rack": rng.choice([None, "rack-a"])} for n in rng.sample(range(100), rng.choice([1, 3]))]
        fields = {"brokers": brokers, "cluster_id": rng.choice([None, "MkU3OEVBNTcwNTJENDM2Qk"]),
                  "controller_id": rng.choice([-1, 1]), "topics": _metadata_topics(rng, version),
                  "cluster_authorized_operations": rng.choice([-2147483648, 0b1101])}
        if version >= 13:  # the top-level error code (KIP-1102)
            fields["error_code"] = rng.choice([ErrorCode.none, ErrorCode.rebootstrap_required])
        correlation_id = rng.randrange(-(1 << 31), 1 << 31)
        expected = encode_response(correlation_id, build(response_schema(3, version), {"throttle_time": 0, **fields}))
        assert encode_metadata_response(correlation_id, version, **fields) == expected


def _offset_commit_topics(rng: random.Random) -> list[dict[str, Any]]:
    # name up to v9, topic_id from v10 (None: the zero UUID); each version writes only its own.
    return [{"name": rng.choice(NAMES), "topic_id": rng.choice([None, uuid.UUID(int=rng.getrandbits(128))]),
             "partitions": [
        {"partition_index": index, "error_code": rng.choice(
            [ErrorCode.none, ErrorCode.none, ErrorCode.offset_metadata_too_large, ErrorCode.unknown_member_id])}
        for index in rng.sample(range(1000), rng.choice([0, 1, 3, 130]))]}
        for _ in range(rng.choice([0, 1, 1, 3]))]


@pytest.mark.parametrize("version", range(OFFSET_COMMIT.min_version, OFFSET_COMMIT.max_version + 1))
def test_offset_commit_response_matches_kio(version: int) -> None:
    """Every version the broker advertises, flexible ones (v8+) with their empty tag buffers."""
    rng = random.Random(300 + version)
    for _ in range(30):
        topics = _offset_commit_topics(rng)
        throttle = rng.choice([0, 5000])
        correlation_id = rng.randrange(-(1 << 31), 1 << 31)
        expected = encode_response(correlation_id, build(response_schema(8, version),
                                                         {"throttle_time": throttle, "topics": topics}))
        assert encode_offset_commit_response(correlation_id, version, topics, throttle) == expected
