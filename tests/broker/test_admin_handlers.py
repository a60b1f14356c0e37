"""Admin API handlers in process, with requests built per version and responses encoded as they
would go on the wire: DescribeTopicPartitions paging, AlterConfigs / IncrementalAlterConfigs
answers per resource, DeleteRecords, DescribeLogDirs and ListOffsets' v8+ specs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from broker.dispatch import HANDLERS
from broker.handler import RequestContext
from broker.principal import LOCAL_ANONYMOUS
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, decode_response, encode_response, request_schema
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from tests.request_samples import as_handled

E = ErrorCode


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    return await broker_state(a=3, b=2, c=1)


async def call(state: BrokerState, key: ApiKey, version: int, **fields: Any) -> Any:
    request = as_handled(build(request_schema(key, version), fields))
    header = RequestHeader(api_key=key, api_version=version, correlation_id=7, client_id="test")
    ctx = RequestContext(header=header, broker=state, peer="test", session=LOCAL_ANONYMOUS)
    return entity(await HANDLERS[key].handle(ctx, request), key, version)


def entity(response: Any, key: ApiKey, version: int) -> Any:
    """A handler's response as an entity, checked to serialise for this version (Produce, Fetch and
    Metadata write their own bytes, protocol/fast_responses.py: those are decoded)."""
    if isinstance(response, list):  # Fetch's buffers
        response = b"".join(response)
    if isinstance(response, bytes):
        correlation_id, response = decode_response(response[4:], key, version)
        assert correlation_id == 7
        return response
    assert encode_response(7, response)
    return response


def pages(response: Any) -> list[tuple[str, list[int]]]:
    return [(t.name, [p.partition_index for p in t.partitions]) for t in response.topics]


async def test_describe_topic_partitions_pages_by_partition_limit(state: BrokerState) -> None:
    key = ApiKey.DESCRIBE_TOPIC_PARTITIONS
    topics = [{"name": n} for n in ("c", "a", "b")]
    first = await call(state, key, 0, topics=topics, response_partition_limit=4)
    assert pages(first) == [("a", [0, 1, 2]), ("b", [0])]
    assert first.topics[0].partitions[0].eligible_leader_replicas == ()  # Java 3.9 NPEs on null
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("b", 1)
    second = await call(state, key, 0, topics=topics, response_partition_limit=4,
                        cursor={"topic_name": "b", "partition_index": 1})
    assert pages(second) == [("b", [1]), ("c", [0])] and second.next_cursor is None
    exact = await call(state, key, 0, topics=topics, response_partition_limit=3)
    assert pages(exact) == [("a", [0, 1, 2])]
    assert (exact.next_cursor.topic_name, exact.next_cursor.partition_index) == ("b", 0)


async def test_describe_topic_partitions_all_unknown_and_bad_cursor(state: BrokerState) -> None:
    key = ApiKey.DESCRIBE_TOPIC_PARTITIONS
    everything = await call(state, key, 0, topics=[], response_partition_limit=2000)
    assert [t.name for t in everything.topics] == ["a", "b", "c"]
    unknown = await call(state, key, 0, topics=[{"name": "zz"}], response_partition_limit=10)
    assert [(t.name, t.error_code) for t in unknown.topics] == [("zz", E.unknown_topic_or_partition)]
    bad = await call(state, key, 0, topics=[{"name": "a"}], response_partition_limit=10,
                     cursor={"topic_name": "b", "partition_index": 0})
    assert [(t.name, t.error_code) for t in bad.topics] == [("a", E.invalid_request)]


async def test_alter_configs_answers_per_resource(state: BrokerState) -> None:
    r = await call(state, ApiKey.ALTER_CONFIGS, 1, validate_only=False, resources=[
        {"resource_type": 2, "resource_name": "a", "configs": [{"name": "retention.ms", "value": "5000"}]},
        {"resource_type": 2, "resource_name": "b", "configs": [{"name": "retention.ms", "value": None}]},
        {"resource_type": 4, "resource_name": "1", "configs": [{"name": "log.dirs", "value": "/x"}]},
        {"resource_type": 2, "resource_name": "c", "configs": [{"name": "bogus", "value": "1"}]},
        {"resource_type": 2, "resource_name": "c", "configs": []},
    ])
    assert [x.error_code for x in r.responses] == [E.none, E.invalid_request, E.invalid_request,
                                                   E.invalid_request, E.invalid_request]
    assert state.logs.topics["a"].configs == {"retention.ms": "5000"}
    assert state.logs.get_log(TopicPartition("a", 0)).config.retention_ms == 5000


async def test_incremental_alter_configs_duplicate_keys_and_validate_only(state: BrokerState) -> None:
    def resource(name: str, *ops: tuple[str, int, str | None]) -> dict[str, Any]:
        return {"resource_type": 2, "resource_name": name,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}

    r = await call(state, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=True, resources=[
        resource("a", ("retention.ms", 0, "1"), ("retention.ms", 1, None)),
        resource("b", ("cleanup.policy", 2, "compact")),
    ])
    assert [x.error_code for x in r.responses] == [E.invalid_request, E.none]
    assert state.logs.topics["b"].configs == {}


async def test_delete_records_and_log_dirs(state: BrokerState) -> None:
    plog = state.logs.get_log(TopicPartition("a", 1))
    await plog.append(bytes(build_batch([Record(value=b"x", timestamp=1) for _ in range(10)])))
    r = await call(state, ApiKey.DELETE_RECORDS, 2, timeout=1000, topics=[
        {"name": "a", "partitions": [{"partition_index": 1, "offset": 4}, {"partition_index": 0, "offset": 1}]},
        {"name": "zz", "partitions": [{"partition_index": 0, "offset": 0}]},
    ])
    got = [(t.name, p.partition_index, p.low_watermark, p.error_code) for t in r.topics for p in t.partitions]
    assert got == [("a", 1, 4, E.none), ("a", 0, -1, E.offset_out_of_range),
                   ("zz", 0, -1, E.unknown_topic_or_partition)]
    dirs = await call(state, ApiKey.DESCRIBE_LOG_DIRS, 4, topics=[{"topic": "a", "partitions": [1, 7]}])
    (result,) = dirs.results
    sizes = [(t.name, p.partition_index, p.partition_size) for t in result.topics for p in t.partitions]
    assert sizes == [("a", 1, plog.size_bytes)] and plog.size_bytes > 0
    assert result.total_bytes > 0 and result.usable_bytes > 0
    everything = await call(state, ApiKey.DESCRIBE_LOG_DIRS, 1, topics=None)
    assert sum(len(t.partitions) for t in everything.results[0].topics) == 6


async def test_list_offsets_earliest_local_and_latest_tiered(state: BrokerState) -> None:
    plog = state.logs.get_log(TopicPartition("c", 0))
    await plog.append(bytes(build_batch([Record(value=b"x", timestamp=1) for _ in range(5)])))
    await plog.delete_records_before(2)
    r = await call(state, ApiKey.LIST_OFFSETS, 10, replica_id=-1, isolation_level=0, timeout=1000, topics=[
        {"name": "c", "partitions": [{"partition_index": 0, "timestamp": ts, "current_leader_epoch": -1}
                                     for ts in (-4, -5, -2, -1)]}])
    assert [p.offset for p in r.topics[0].partitions] == [2, -1, 2, 5]


async def test_concurrent_metadata_requests_auto_create_a_topic_once(state: BrokerState) -> None:
    """Topic creation is async (its files are made off the event loop): two Metadata requests
    racing to auto-create one topic create it once, without TOPIC_ALREADY_EXISTS. The creating
    one is told LEADER_NOT_AVAILABLE (Kafka's answer while a new topic is made), the other gets
    the topic, as does the next request."""
    def ask():  # type: ignore[no-untyped-def]
        return call(state, ApiKey.METADATA, 12, topics=[{"name": "new", "topic_id": None}],
                    allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    got = sorted((t.error_code, len(t.partitions)) for r in await asyncio.gather(ask(), ask()) for t in r.topics)
    assert got == [(ErrorCode.none, 1), (ErrorCode.leader_not_available, 0)]
    assert list(state.logs.topics).count("new") == 1
    [again] = (await ask()).topics
    assert (again.name, again.error_code, len(again.partitions)) == ("new", ErrorCode.none, 1)
