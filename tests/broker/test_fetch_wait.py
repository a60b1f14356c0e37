"""Fetch's long poll: a fetch that finds less than min_bytes watches its partitions and an append
to any of them answers it; a fetch that finds enough watches nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from tests.broker.test_admin_handlers import call


def fetch(state: Any, max_wait: int, partitions: range) -> Any:
    return call(state, ApiKey.FETCH, 12, replica_id=-1, max_wait=max_wait, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                topics=[{"topic": "t", "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                     "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p in partitions]}])


async def test_an_append_answers_a_waiting_fetch_and_then_nothing_is_watched(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await broker_state(t=2)
    logs = [state.logs.get_log(TopicPartition("t", p)) for p in range(2)]
    waiting = asyncio.ensure_future(fetch(state, 600_000, range(2)))
    for _ in range(100):  # event-loop turns, until it has read, found nothing, and watches both
        if all(log._waiters for log in logs):
            break
        await asyncio.sleep(0)
    assert all(log._waiters for log in logs) and not waiting.done()
    await logs[1].append(bytes(build_batch([Record(value=b"v")])))
    response = await asyncio.wait_for(waiting, 60)  # a guard against a hang, not a speed limit
    assert [bool(p.records) for p in response.responses[0].partitions] == [False, True]
    assert not any(log._waiters for log in logs)
    again = await fetch(state, 600_000, range(2))  # data at once: answered without watching
    assert [bool(p.records) for p in again.responses[0].partitions] == [False, True]
    assert not any(log._waiters for log in logs)


def fetch_topics(state: Any, topics: dict[str, dict[int, int]]) -> Any:
    """A fetch waiting up to 10 minutes for one byte of topic -> {partition: fetch offset}."""
    return call(state, ApiKey.FETCH, 12, replica_id=-1, max_wait=600_000, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                topics=[{"topic": name, "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
                     "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p, offset in parts.items()]}
                        for name, parts in topics.items()])


async def test_a_failed_read_answers_at_once_and_an_unknown_topic_does_not(broker_state) -> None:  # type: ignore[no-untyped-def]
    """As Kafka: an error the read finds (here OFFSET_OUT_OF_RANGE) ends the long poll; a topic
    that does not exist is set aside before the reads and the others are waited on."""
    state = await broker_state(t=2)
    response = await asyncio.wait_for(fetch_topics(state, {"t": {0: 0, 1: 42}}), 60)  # guard, not a limit
    codes = [p.error_code for p in response.responses[0].partitions]
    assert codes == [ErrorCode.none, ErrorCode.offset_out_of_range]
    log = state.logs.get_log(TopicPartition("t", 0))
    waiting = asyncio.ensure_future(fetch_topics(state, {"t": {0: 0}, "nope": {0: 0}}))
    for _ in range(100):
        if log._waiters:
            break
        await asyncio.sleep(0)
    assert log._waiters and not waiting.done()
    await log.append(bytes(build_batch([Record(value=b"v")])))
    response = await asyncio.wait_for(waiting, 60)
    by_topic = {t.topic: t.partitions[0] for t in response.responses}
    assert by_topic["t"].records and by_topic["nope"].error_code == ErrorCode.unknown_topic_or_partition
