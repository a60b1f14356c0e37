"""Fetch's response limit (KIP-74): the first partition with data returns its first batch whatever
its size, and after it every partition keeps within what is left of max_bytes, as Kafka's
ReplicaManager.readFromLog does (minOneMessage is on only until a read returns bytes)."""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.records import Record, build_batch
from storage.api import TopicPartition
from tests.broker.test_admin_handlers import call

BATCH_VALUE = 900 * 1024  # librdkafka's 0082-fetch_max_bytes: one ~900 KiB record a batch


def fetch(state: Any, max_bytes: int, partition_max_bytes: int, partitions: range) -> Any:
    return call(state, ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=max_bytes,
                isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                topics=[{"topic": "t", "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                     "log_start_offset": -1, "partition_max_bytes": partition_max_bytes} for p in partitions]}])


def sizes(response: Any) -> list[int]:
    return [sum(map(len, p.records)) if isinstance(p.records, list) else len(p.records or b"")
            for p in response.responses[0].partitions]


async def _three_big_partitions(broker_state: Any) -> Any:
    state = await broker_state(t=3)
    for p in range(3):
        log = state.logs.get_log(TopicPartition("t", p))
        for _ in range(2):
            await log.append(bytes(build_batch([Record(value=b"x" * BATCH_VALUE)])))
    return state


async def test_only_the_first_partition_with_data_may_exceed_max_bytes(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await _three_big_partitions(broker_state)
    got = sizes(await fetch(state, 1_000_000, 20_000_000, range(3)))
    # One batch of the first partition (over the limit, KIP-74), nothing of the others: before,
    # every partition sent its first batch and the 1 MB fetch came back at 2.7 MB, which
    # librdkafka refuses (receive.message.max.bytes) and retries forever.
    assert got[0] > BATCH_VALUE and got[1:] == [0, 0]
    assert sum(got) < 1_000_000


async def test_later_partitions_fill_what_is_left(broker_state) -> None:  # type: ignore[no-untyped-def]
    state = await _three_big_partitions(broker_state)
    one = sizes(await fetch(state, 1 << 30, 20_000_000, range(1)))[0] // 2  # one batch's size
    got = sizes(await fetch(state, 3 * one + 10, 20_000_000, range(3)))
    assert got == [2 * one, one, 0]  # the third partition's batch would pass the limit
    # partition_max_bytes bounds each partition; the first still gets one batch when it is smaller.
    assert sizes(await fetch(state, 1 << 30, 100, range(3))) == [one, 0, 0]
