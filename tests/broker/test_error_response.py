"""Whole-request error answers (broker/error_response.py) for every API and version in the dispatch
table, and dispatch's handling of handler failures: a KafkaError answers the request with its
error, anything else with UNKNOWN_SERVER_ERROR and one logged traceback, a null where the schema
forbids one closes the connection, as Kafka's parser does."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import Any

import pytest

from broker.dispatch import HANDLER_MODULES, HANDLERS, dispatch
from broker.error_response import error_response, null_in_non_nullable
from broker.handler import CloseConnection, RequestContext
from broker.principal import LOCAL_ANONYMOUS
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.codec import RequestHeader, decode_request, encode_response, request_schema
from protocol.errors import ErrorCode, KafkaError
from tests.kafka_wire import decode_response, encode_request
from tests.request_samples import as_handled, sample, sample_request

E = ErrorCode
TABLE = [(h.api_key, v) for h in HANDLERS.values() for v in range(h.min_version, h.max_version + 1) if h.parses(v)]
# Response arrays that list what the broker has rather than answering the request's items.
NOT_MIRRORED = {("groups", ApiKey.LIST_GROUPS), ("transaction_states", ApiKey.LIST_TRANSACTIONS),
                ("results", ApiKey.DESCRIBE_LOG_DIRS), ("resources", ApiKey.DESCRIBE_ACLS),
                ("filter_results.matching_acls", ApiKey.DELETE_ACLS), ("topics.partitions", ApiKey.METADATA),
                ("topics.partitions", ApiKey.DESCRIBE_TOPIC_PARTITIONS)}


def error_fields(entity: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, value) of every error_code and error_message in a response."""
    out = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.metadata.get("kafka_type") == "error_code" or f.name == "error_message":
            out.append((path + f.name, value))
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            for item in value:
                out += error_fields(item, f"{path}{f.name}.")
        elif dataclasses.is_dataclass(value):
            out += error_fields(value, f"{path}{f.name}.")
    return out


def empty_error_arrays(entity: Any) -> list[str]:
    """Response arrays of error-carrying items that came out empty."""
    out = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if value == () and any(n.endswith("error_code") for n, _ in error_fields(
                build(_item_type(entity, f.name), {}))):
            out.append(f.name)
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            out += [f"{f.name}.{n}" for n in empty_error_arrays(value[0])]
    return out


def _item_type(entity: Any, name: str) -> Any:
    import typing
    hint = typing.get_type_hints(type(entity))[name]
    for arg in (hint, *typing.get_args(hint)):
        if typing.get_origin(arg) is tuple:
            elem = typing.get_args(arg)[0]
            return elem if dataclasses.is_dataclass(elem) else _NoErrors
    return _NoErrors


@dataclasses.dataclass
class _NoErrors:
    pass


@pytest.mark.parametrize("key,version", TABLE, ids=lambda x: str(getattr(x, "name", x)))
def test_error_response_encodes_and_carries_the_error_everywhere(key: ApiKey, version: int) -> None:
    request = sample_request(key, version)
    response = error_response(key, version, request, E.unknown_server_error, "boom")
    _, decoded = decode_response(encode_response(9, response)[4:], key, version)
    found = error_fields(decoded)
    codes = [v for n, v in found if n.endswith("error_code")]
    if key is ApiKey.DESCRIBE_LOG_DIRS and version < 3:
        assert codes == []  # no top-level error yet and its results are log dirs: Kafka's answer is empty too
    else:
        assert codes and set(codes) == {E.unknown_server_error}, found
    assert {v for n, v in found if n.endswith("error_message")} <= {"boom"}
    empty = [n for n in empty_error_arrays(decoded) if (n, key) not in NOT_MIRRORED]
    assert not empty, f"{key.name} v{version}: nothing mirrored into {empty}"


def test_items_mirror_the_request_by_name() -> None:
    produce = build(request_schema(ApiKey.PRODUCE, 9), {"acks": -1, "timeout": 1000, "topic_data": [
        {"name": "a", "partition_data": [{"index": 0, "records": b""}, {"index": 3, "records": b""}]},
        {"name": "b", "partition_data": [{"index": 1, "records": b""}]}]})
    r = error_response(ApiKey.PRODUCE, 9, produce, E.invalid_request, "no")
    assert [(t.name, [(p.index, p.error_code, p.error_message) for p in t.partition_responses])
            for t in r.responses] == [("a", [(0, E.invalid_request, "no"), (3, E.invalid_request, "no")]),
                                      ("b", [(1, E.invalid_request, "no")])]
    fetch = sample_request(ApiKey.FETCH, 4)  # v4-6 have no top-level error_code
    r = error_response(ApiKey.FETCH, 4, fetch, E.unknown_server_error, None)
    assert [(t.topic, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.responses] == \
        [("t", [(0, E.unknown_server_error)])]
    delete = build(request_schema(ApiKey.DELETE_TOPICS, 5), {"topic_names": ["x", "y"], "timeout": 0})
    r = error_response(ApiKey.DELETE_TOPICS, 5, delete, E.invalid_request, None)
    assert [(t.name, t.error_code) for t in r.responses] == [("x", E.invalid_request), ("y", E.invalid_request)]
    find = build(request_schema(ApiKey.FIND_COORDINATOR, 4), {"key_type": 9, "coordinator_keys": ["g1", "g2"]})
    r = error_response(ApiKey.FIND_COORDINATOR, 4, find, E.invalid_request, "key type")
    assert [(c.key, c.error_code, c.error_message) for c in r.coordinators] == \
        [("g1", E.invalid_request, "key type"), ("g2", E.invalid_request, "key type")]


def test_unknown_offsets_and_timestamps_are_minus_one() -> None:
    """Kafka's error items say -1 (INVALID_OFFSET, NO_TIMESTAMP) where a 0 would read as real."""
    produce = error_response(ApiKey.PRODUCE, 9, sample_request(ApiKey.PRODUCE, 9), E.unknown_server_error, None)
    p = produce.responses[0].partition_responses[0]
    assert (p.base_offset, p.log_start_offset) == (-1, -1)
    fetch = error_response(ApiKey.FETCH, 12, sample_request(ApiKey.FETCH, 12), E.unknown_server_error, None)
    f = fetch.responses[0].partitions[0]
    assert (f.high_watermark, f.last_stable_offset, f.log_start_offset) == (-1, -1, -1)
    request = sample_request(ApiKey.LIST_OFFSETS, 7)
    request = dataclasses.replace(request, topics=tuple(
        dataclasses.replace(t, partitions=tuple(dataclasses.replace(q, timestamp=-2) for q in t.partitions))
        for t in request.topics))
    listed = error_response(ApiKey.LIST_OFFSETS, 7, request, E.unknown_server_error, None)
    o = listed.topics[0].partitions[0]
    assert (o.offset, o.timestamp, o.leader_epoch) == (-1, -1, -1)


def test_top_level_scalars_are_not_echoed() -> None:
    fetch = dataclasses.replace(sample_request(ApiKey.FETCH, 12), session_id=77)
    r = error_response(ApiKey.FETCH, 12, fetch, E.unknown_server_error, None)
    assert r.session_id == 0 and r.error_code is E.unknown_server_error


def test_dispatch_table_names_each_module_once() -> None:
    # One module per API, named as Kafka names the API.
    assert sorted(m.upper() for m in HANDLER_MODULES) == sorted(k.name for k in HANDLERS)


def test_null_in_non_nullable_names_the_path() -> None:
    assert null_in_non_nullable(sample_request(ApiKey.PRODUCE, 9)) is None
    produce = sample_request(ApiKey.PRODUCE, 9)
    topic = dataclasses.replace(produce.topic_data[0], partition_data=None)
    assert null_in_non_nullable(dataclasses.replace(produce, topic_data=(topic,))) == "topic_data.partition_data"
    metadata = sample(request_schema(ApiKey.METADATA, 12))
    assert null_in_non_nullable(dataclasses.replace(metadata, topics=None)) is None  # nullable from v1


# -- dispatch ----------------------------------------------------------------------------------------


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    return await broker_state(t=1)


def context(state: BrokerState, key: ApiKey, version: int) -> RequestContext:
    header = RequestHeader(api_key=key, api_version=version, correlation_id=5, client_id="test")
    return RequestContext(header=header, broker=state, peer="test", session=LOCAL_ANONYMOUS)


async def answer(state: BrokerState, request: Any) -> Any:
    key, version = request.__api_key__, request.__version__
    raw = await dispatch(context(state, key, version), as_handled(request))
    assert raw is not None
    if isinstance(raw, list):  # Fetch's buffers (protocol/fast_responses.py)
        raw = b"".join(raw)
    header, body = decode_response(raw[4:], key, version)
    assert header.correlation_id == 5
    return body


async def test_unexpected_exception_answers_unknown_server_error_and_logs_once(state, caplog) -> None:
    state.logs = None  # every handler that reaches for a log now fails in a way no handler expects
    request = build(request_schema(ApiKey.METADATA, 12), {"topics": [{"name": "t"}, {"name": "u"}]})
    with caplog.at_level(logging.ERROR, logger="broker.dispatch"):
        body = await answer(state, request)
    assert [(t.name, t.error_code) for t in body.topics] == [("t", E.unknown_server_error),
                                                              ("u", E.unknown_server_error)]
    [record] = caplog.records
    assert record.exc_info is not None and "METADATA v12 (correlation id 5)" in record.getMessage()


async def test_kafka_error_escaping_a_handler_answers_with_it(state) -> None:
    # Metadata v10-11 carry topic ids but a null name is invalid there (KafkaApis' check).
    request = build(request_schema(ApiKey.METADATA, 10), {"topics": [{"name": None}]})
    body = await answer(state, request)
    assert [(t.name, t.error_code) for t in body.topics] == [("", E.invalid_request)]


@pytest.mark.parametrize("key,version", [(ApiKey.FETCH, 4), (ApiKey.FETCH, 12), (ApiKey.FETCH, 18),
                                         (ApiKey.LIST_OFFSETS, 2), (ApiKey.LIST_OFFSETS, 10)])
async def test_unknown_isolation_level_is_invalid_request(state, key, version) -> None:
    request = dataclasses.replace(sample_request(key, version), isolation_level=7)
    body = await answer(state, request)
    codes = {v for n, v in error_fields(body) if n.endswith("error_code")}
    assert codes == {E.invalid_request}


async def test_null_in_a_non_nullable_field_closes_the_connection(state) -> None:
    # Produce and Fetch requests are read by hand and their nulls refused there
    # (tests/protocol/test_produce_request.py, test_fetch_request.py).
    frame = encode_request(sample_request(ApiKey.LIST_OFFSETS, 7), 5)
    header, request = decode_request(frame, lambda *_: True)
    request = dataclasses.replace(request, topics=None)
    with pytest.raises(KafkaError) as info:
        await dispatch(context(state, ApiKey.LIST_OFFSETS, 7), request)
    assert info.value.code is E.invalid_request and "topics" in str(info.value)


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_answers_errors_as_error_response_would(version: int) -> None:
    """Produce requests are not kio entities (protocol/produce_request.py): the handler answers
    their errors itself, with the bytes error_response gives for the kio request."""
    kio_request = dataclasses.replace(sample_request(ApiKey.PRODUCE, version), acks=1)
    header, request = decode_request(encode_request(kio_request, 5), lambda *_: True)
    ctx = RequestContext(header=header, broker=None, peer="test", session=LOCAL_ANONYMOUS)
    for code, message in ((E.not_leader_or_follower, "boom"), (E.unknown_server_error, None)):
        expected = encode_response(5, error_response(ApiKey.PRODUCE, version, kio_request, code, message))
        assert HANDLERS[ApiKey.PRODUCE].answer_error(ctx, request, code, message) == expected


async def test_a_failed_produce_answers_every_partition(state) -> None:
    kio_request = build(request_schema(ApiKey.PRODUCE, 9), {"acks": -1, "timeout": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b""}, {"index": 3, "records": None}]},
        {"name": "u", "partition_data": [{"index": 1, "records": b""}]}]})
    _, request = decode_request(encode_request(kio_request, 5), lambda *_: True)
    state.logs = None  # the handler fails in a way it does not expect
    raw = await dispatch(context(state, ApiKey.PRODUCE, 9), request)
    assert isinstance(raw, bytes)
    _, body = decode_response(raw[4:], ApiKey.PRODUCE, 9)
    assert [(t.name, [(p.index, p.error_code, p.base_offset) for p in t.partition_responses])
            for t in body.responses] == [("t", [(0, E.unknown_server_error, -1), (3, E.unknown_server_error, -1)]),
                                         ("u", [(1, E.unknown_server_error, -1)])]
    with pytest.raises(CloseConnection):
        await dispatch(context(state, ApiKey.PRODUCE, 9), request._replace(acks=0))


async def test_failed_acks_0_produce_closes_the_connection(state) -> None:
    request = dataclasses.replace(sample_request(ApiKey.PRODUCE, 9), acks=0)
    request = dataclasses.replace(request, topic_data=(dataclasses.replace(request.topic_data[0], name="nope"),))
    with pytest.raises(CloseConnection):
        await dispatch(context(state, ApiKey.PRODUCE, 9), request)


def fetch_sample(version: int, topic_id: Any = None) -> Any:
    """A Fetch of two topics (by topic_id from v13), with isolation level 1 and a session."""
    request = dataclasses.replace(sample_request(ApiKey.FETCH, version), isolation_level=1)
    [topic] = request.topics
    [part] = topic.partitions
    if version >= 13:
        topic = dataclasses.replace(topic, topic_id=topic_id)
    second = dataclasses.replace(topic, partitions=(part, dataclasses.replace(part, partition=4)))
    fields = {"session_id": 9, "session_epoch": 0} if version >= 7 else {}
    return dataclasses.replace(request, topics=(topic, second), **fields)


@pytest.mark.parametrize("version", range(4, 19))
def test_fetch_answers_errors_as_error_response_would(version: int) -> None:
    """Fetch requests are not kio entities (protocol/fetch_request.py): the handler answers their
    errors itself, with the bytes error_response gives for the kio request, whose partitions Kafka
    leaves out from v13 (FetchRequest.getErrorResponse)."""
    for topic_id in (None, uuid.UUID(int=5)):
        kio_request = fetch_sample(version, topic_id)
        header, request = decode_request(encode_request(kio_request, 5), lambda *_: True)
        ctx = RequestContext(header=header, broker=None, peer="test", session=LOCAL_ANONYMOUS)
        as_kafka = kio_request if version < 13 else dataclasses.replace(kio_request, topics=())
        for code, message in ((E.not_leader_or_follower, "boom"), (E.unknown_server_error, None)):
            expected = encode_response(5, error_response(ApiKey.FETCH, version, as_kafka, code, message))
            assert HANDLERS[ApiKey.FETCH].answer_error(ctx, request, code, message) == expected


@pytest.mark.parametrize("version", range(4, 19))
async def test_a_failed_fetch_answers_its_partitions_up_to_v12(state, version) -> None:
    _, request = decode_request(encode_request(fetch_sample(version, uuid.UUID(int=5)), 5), lambda *_: True)
    state.logs = None  # the handler fails in a way it does not expect
    raw = await dispatch(context(state, ApiKey.FETCH, version), request)
    assert isinstance(raw, bytes)
    _, body = decode_response(raw[4:], ApiKey.FETCH, version)
    assert getattr(body, "error_code", E.unknown_server_error) is E.unknown_server_error
    assert getattr(body, "session_id", 0) == 0
    if version >= 13:  # Kafka's FetchRequest.getErrorResponse: the top-level error only
        assert body.responses == ()
        return
    assert [[(p.partition_index, p.error_code, p.high_watermark, p.records) for p in t.partitions]
            for t in body.responses] == [[(0, E.unknown_server_error, -1, None)],
                                         [(0, E.unknown_server_error, -1, None), (4, E.unknown_server_error, -1, None)]]
    assert [t.topic for t in body.responses] == ["t", "t"]


def with_partition(request: Any, **fields: Any) -> Any:
    """`request` with its first topic's first partition changed."""
    [topic] = request.topics
    [part] = topic.partitions
    topic = dataclasses.replace(topic, partitions=(dataclasses.replace(part, **fields),))
    return dataclasses.replace(request, topics=(topic,))


@pytest.mark.parametrize("key,version", [(ApiKey.FETCH, 9), (ApiKey.FETCH, 12), (ApiKey.LIST_OFFSETS, 4),
                                         (ApiKey.LIST_OFFSETS, 10), (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2),
                                         (ApiKey.OFFSET_FOR_LEADER_EPOCH, 4)])
@pytest.mark.parametrize("epoch,code", [(-1, E.none), (0, E.none), (1, E.unknown_leader_epoch),
                                        (-7, E.fenced_leader_epoch)])
async def test_current_leader_epoch_is_checked(state, key, version, epoch, code) -> None:
    # KIP-320: every partition here is led at epoch 0, forever.
    body = await answer(state, with_partition(sample_request(key, version), current_leader_epoch=epoch))
    assert {v for n, v in error_fields(body) if n.endswith("error_code") and "." in n} == {code}


@pytest.mark.parametrize("session_id,epoch,code", [(0, -1, E.none), (0, 0, E.none), (9, 0, E.none),
                                                   (9, -1, E.none), (0, 5, E.fetch_session_id_not_found),
                                                   (9, 3, E.fetch_session_id_not_found),
                                                   (0, -2, E.fetch_session_id_not_found)])
async def test_incremental_fetches_name_unknown_sessions(state, session_id, epoch, code) -> None:
    """Epoch 0 opens a session (KIP-227), -1 fetches without one; an incremental fetch (any other
    epoch) of a session the broker does not hold is FETCH_SESSION_ID_NOT_FOUND, with session id 0."""
    request = dataclasses.replace(sample_request(ApiKey.FETCH, 12), session_id=session_id, session_epoch=epoch)
    body = await answer(state, request)
    assert body.error_code is code and (body.session_id != 0) == (epoch == 0)
