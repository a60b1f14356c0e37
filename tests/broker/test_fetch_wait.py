"""Fetch's long poll: a fetch that finds less than min_bytes watches its partitions and an append
to any of them answers it; a fetch that finds enough watches nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.api_keys import ApiKey
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
