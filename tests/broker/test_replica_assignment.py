"""Manual replica assignments in CreateTopics and CreatePartitions, with Kafka's controller's
answers: librdkafka's admin tests (0081) and kafka-topics --replica-assignment send them."""

from __future__ import annotations

from typing import Any

import pytest

from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from .test_admin_handlers import call

E = ErrorCode


@pytest.fixture
async def state(broker_state):  # type: ignore[no-untyped-def]
    return await broker_state(existing=2)


def _topic(name: str, assignments: list[list[int]], partitions: int = -1, rf: int = -1,
           indexes: list[int] | None = None) -> dict[str, Any]:
    idx = indexes if indexes is not None else list(range(len(assignments)))
    return {"name": name, "num_partitions": partitions, "replication_factor": rf, "configs": [],
            "assignments": [{"partition_index": i, "broker_ids": b} for i, b in zip(idx, assignments, strict=True)]}


async def _create(state: BrokerState, topic: dict[str, Any]) -> Any:
    response = await call(state, ApiKey.CREATE_TOPICS, 7, topics=[topic], timeout=1000, validate_only=False)
    return response.topics[0]


async def test_a_valid_assignment_creates_the_topic_with_its_layout(state: BrokerState) -> None:
    node = state.config.node_id
    result = await _create(state, _topic("t", [[node], [node], [node]]))
    assert result.error_code == E.none, result.error_message
    assert (result.num_partitions, result.replication_factor) == (3, 1)
    assert state.logs.topics["t"].partitions == 3


@pytest.mark.parametrize(("topic", "code", "words"), [
    (_topic("a", [[1]], rf=1), E.invalid_request, "replication factor was not set to -1"),
    (_topic("b", [[1]], partitions=1), E.invalid_request, "numPartitions was not set to -1"),
    (_topic("c", [[1], [1]], indexes=[0, 0]), E.invalid_replica_assignment, "multiple manual partition"),
    (_topic("d", [[1], [1]], indexes=[0, 2]), E.invalid_replica_assignment, "consecutive 0-based"),
    (_topic("e", [[]]), E.invalid_replica_assignment, "empty replica list"),
    (_topic("f", [[7]]), E.invalid_replica_assignment, "broker 7, but no such broker is registered"),
    (_topic("g", [[1, 1]]), E.invalid_replica_assignment, "broker 1 more than once"),
])
async def test_kafkas_refusals(state: BrokerState, topic: dict[str, Any], code: ErrorCode, words: str) -> None:
    result = await _create(state, topic)
    assert result.error_code == code and words in result.error_message
    assert topic["name"] not in state.logs.topics


async def _add(state: BrokerState, count: int, assignments: list[list[int]]) -> Any:
    response = await call(state, ApiKey.CREATE_PARTITIONS, 3, timeout=1000, validate_only=False,
                          topics=[{"name": "existing", "count": count,
                                   "assignments": [{"broker_ids": b} for b in assignments]}])
    return response.results[0]


async def test_create_partitions_with_assignments(state: BrokerState) -> None:
    node = state.config.node_id
    short = await _add(state, 4, [[node]])
    assert short.error_code == E.invalid_replica_assignment and "only 1 assignment(s)" in short.error_message
    unknown = await _add(state, 3, [[node + 5]])
    assert unknown.error_code == E.invalid_replica_assignment
    empty = await _add(state, 4, [[node], []])
    assert empty.error_code == E.invalid_replica_assignment
    assert state.logs.topics["existing"].partitions == 2
    ok = await _add(state, 4, [[node], [node]])
    assert ok.error_code == E.none and state.logs.topics["existing"].partitions == 4
    not_more = await _add(state, 4, [[node]])
    assert not_more.error_code == E.invalid_partitions
